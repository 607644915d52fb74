import type { z } from 'zod';
import type { EndpointRow } from '../../../projections/endpoints.table.ts';
import type { EndpointState } from '../../domain/endpoint/state.ts';
import { servedVerbs } from '../../domain/endpoint/verbs.ts';
import { ingestUrl } from '../../domain/webhook/decide.ts';
import type { Vended } from '../../endpoints/vend.ts';
import type { EndpointOut, VendEndpointOut } from './schemas.ts';

export const mcpUrl = (baseUrl: string, slug: string): string => `${baseUrl}/mcp/${slug}`;

/**
 * A `mcpServers` entry ready to paste into an MCP client's configuration: Streamable HTTP
 * (`type: http`) at the endpoint's URL with its bearer.
 */
export function mcpJson(baseUrl: string, slug: string, token: string): Record<string, unknown> {
  return {
    mcpServers: {
      [slug]: { type: 'http', url: mcpUrl(baseUrl, slug), headers: { Authorization: `Bearer ${token}` } },
    },
  };
}

export function vendedOut(baseUrl: string, v: Vended): z.infer<typeof VendEndpointOut> {
  return {
    id: v.endpointId,
    agent_id: v.agentId,
    agent_name: v.agentName,
    slug: v.slug,
    mcp_url: mcpUrl(baseUrl, v.slug),
    token: v.token,
    queue: v.queues[0]!,
    queues: [...v.queues],
    verbs: [...v.verbs],
    webhook: {
      webhook_id: v.webhookId,
      ingest_url: ingestUrl(baseUrl, v.ingestToken),
      trust_mode: 'token',
      scheme: v.webhookScheme,
      signing_secret: v.webhookSecret,
    },
    mcp_json: mcpJson(baseUrl, v.slug, v.token),
    expires_at: v.expiresAt ? v.expiresAt.toISOString() : null,
    replay_targets: [...v.replayTargets],
  };
}

export function endpointRowOut(baseUrl: string, row: EndpointRow): z.infer<typeof EndpointOut> {
  return {
    id: row.id,
    slug: row.slug,
    agent_id: row.agent_id,
    agent_name: row.agent_name,
    state: row.state,
    queues: row.queues,
    verbs: servedVerbs(row.verbs),
    expires_at: row.expires_at ? row.expires_at.toISOString() : null,
    replay_targets: row.replay_targets,
    mcp_url: mcpUrl(baseUrl, row.slug),
    webhook_id: row.webhook_id,
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at ? row.revoked_at.toISOString() : null,
  };
}

export function endpointStateOut(
  baseUrl: string,
  state: Exclude<EndpointState, { status: 'none' }>,
): z.infer<typeof EndpointOut> {
  return {
    id: state.id,
    slug: state.slug,
    agent_id: state.agentId,
    agent_name: state.agentName,
    state: state.status,
    queues: [...state.queues],
    verbs: servedVerbs(state.verbs),
    expires_at: state.expiresAt ? state.expiresAt.toISOString() : null,
    replay_targets: [...state.replayTargets],
    mcp_url: mcpUrl(baseUrl, state.slug),
    webhook_id: state.webhookId,
    created_at: state.vendedAt.toISOString(),
    revoked_at: state.status === 'revoked' ? state.revokedAt.toISOString() : null,
  };
}
