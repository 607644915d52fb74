import { sha256Hex } from '../endpoint/ids.ts';
import type { AgentEvent, AgentNameEvent } from './events.ts';

export const agentStream = (agentId: string): string => `agent-${agentId}`;

/** The operator and name are hashed so the stream id stays short and free of the name's characters. */
export const agentNameStream = (operator: string, name: string): string =>
  `agent-name-${sha256Hex(`${operator}\n${name}`)}`;

export type AgentState =
  | { readonly status: 'none' }
  | {
      readonly status: 'registered';
      readonly id: string;
      readonly operator: string;
      readonly name: string;
      readonly description: string | null;
    };

export const initialAgentState: AgentState = { status: 'none' };

export function evolveAgent(_state: AgentState, event: AgentEvent): AgentState {
  switch (event.type) {
    case 'AgentRegistered':
      return {
        status: 'registered',
        id: event.data.agent_id,
        operator: event.data.operator,
        name: event.data.name,
        description: event.data.description,
      };
    default: {
      const never: never = event.type;
      return never;
    }
  }
}

export interface RegisterAgent {
  readonly agentId: string;
  readonly operator: string;
  readonly name: string;
  readonly description: string | null;
}

/** Registering is idempotent: an agent that exists already yields no event. */
export function decideRegisterAgent(command: RegisterAgent, state: AgentState, now: Date): AgentEvent[] {
  if (state.status === 'registered') return [];
  return [
    {
      type: 'AgentRegistered',
      data: {
        agent_id: command.agentId,
        operator: command.operator,
        name: command.name,
        description: command.description,
        registered_at: now.toISOString(),
      },
    },
  ];
}

export const agentNameReserved = (agentId: string, operator: string, name: string): AgentNameEvent => ({
  type: 'AgentNameReserved',
  data: { agent_id: agentId, operator, name },
});
