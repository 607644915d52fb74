/**
 * The agent aggregate, stream `agent-<id>`. One agent per (operator, name) (design.md): the pair
 * is reserved on `agent-name-<sha256(operator, name)>` before the agent is registered, so
 * vending again under a name finds and reuses the agent.
 */
export type AgentEvent = {
  readonly type: 'AgentRegistered';
  readonly data: {
    readonly agent_id: string;
    readonly operator: string;
    readonly name: string;
    readonly description: string | null;
    readonly registered_at: string;
  };
};

/** The reservation stream's only event: it names the agent that holds (operator, name). */
export type AgentNameEvent = {
  readonly type: 'AgentNameReserved';
  readonly data: { readonly agent_id: string; readonly operator: string; readonly name: string };
};

export const AGENT_EVENT_TYPES: readonly AgentEvent['type'][] = ['AgentRegistered'];

export const isAgentEventType = (t: string): t is AgentEvent['type'] =>
  (AGENT_EVENT_TYPES as readonly string[]).includes(t);
