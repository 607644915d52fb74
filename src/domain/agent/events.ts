import { z } from 'zod';
import { defineEvent, typesOf } from '../shared.ts';

/**
 * The agent aggregate, stream `agent-<id>`. One agent per (operator, name) (design.md): the pair
 * is reserved on `agent-name-<sha256(operator, name)>` (its stream id is the application's, since
 * it hashes) before the agent is registered, so vending again under a name reuses the agent.
 */
export const agentStream = (agentId: string): string => `agent-${agentId}`;

export const AgentRegistered = defineEvent(
  'AgentRegistered',
  z.object({
    agent_id: z.string(),
    operator: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    registered_at: z.string(),
  }),
);

/** The reservation stream's only event: it names the agent that holds (operator, name). */
export const AgentNameReserved = defineEvent(
  'AgentNameReserved',
  z.object({ agent_id: z.string(), operator: z.string(), name: z.string() }),
);

export const agentEvents = [AgentRegistered] as const;
export const agentNameEvents = [AgentNameReserved] as const;

export type AgentEvent = z.infer<(typeof agentEvents)[number]>;
export type AgentNameEvent = z.infer<(typeof agentNameEvents)[number]>;

export const AGENT_EVENT_TYPES = typesOf(agentEvents);
export const AGENT_NAME_EVENT_TYPES = typesOf(agentNameEvents);
