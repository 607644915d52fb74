import type { AgentCard } from '@a2a-js/sdk';
import type { EndpointFacts } from '../../domain/endpoint/state.ts';
import { FRIEND_GRANTABLE } from '../../domain/friend/grant.ts';

export const a2aUrl = (baseUrl: string, slug: string): string => `${baseUrl}/a2a/${slug}`;
export const agentCardUrl = (baseUrl: string, slug: string): string =>
  `${a2aUrl(baseUrl, slug)}/.well-known/agent-card.json`;

/**
 * The Agent Card of an endpoint that takes friend requests (A2A protocol 0.3): one skill, "friend
 * request", over JSON-RPC at `/a2a/<slug>`. No streaming and no push notifications: the requester
 * follows its task with tasks/get.
 */
export function friendAgentCard(baseUrl: string, version: string, endpoint: EndpointFacts): AgentCard {
  return {
    protocolVersion: '0.3.0',
    name: `hookline endpoint ${endpoint.slug}`,
    description:
      'A hookline work queue. Send a friend request to hand work to it and receive work back; its owner approves or declines.',
    url: a2aUrl(baseUrl, endpoint.slug),
    preferredTransport: 'JSONRPC',
    version,
    capabilities: { streaming: false, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: ['application/json', 'text/plain'],
    defaultOutputModes: ['application/json'],
    skills: [
      {
        id: 'friend-request',
        name: 'friend request',
        description: `Ask the owner to let you hand todos to this endpoint and receive todos back. Send message/send with a data part {"name", "description"?, "card_url"?, "verbs", "queue", "message"?}; verbs a friend can hold: ${FRIEND_GRANTABLE.join(', ')}. The task waits in input-required for the owner; on approval it completes with an artifact carrying mcp_url, bearer and mcp_json (returned once); a decline rejects it; tasks/cancel withdraws it.`,
        tags: ['friends', 'todos', 'mcp'],
        inputModes: ['application/json'],
        outputModes: ['application/json'],
        examples: [
          '{"name":"Build Bot","verbs":["create_for","claim_next","complete"],"queue":"handback","message":"I can take builds."}',
        ],
      },
    ],
  };
}
