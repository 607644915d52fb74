import type { AgentEvent, AgentNameEvent } from './events.ts';

export type AgentState =
  | { readonly status: 'none' }
  | {
      readonly status: 'registered';
      readonly id: string;
      readonly operator: string;
      readonly name: string;
      readonly description: string | null;
    };

export const initialAgentState = (): AgentState => ({ status: 'none' });

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

/** The agent holding an (operator, name) pair, once reserved; the first reservation wins. */
export type AgentNameState = { readonly agentId: string | null };

export const initialAgentNameState = (): AgentNameState => ({ agentId: null });

export function evolveAgentName(state: AgentNameState, event: AgentNameEvent): AgentNameState {
  switch (event.type) {
    case 'AgentNameReserved':
      return { agentId: state.agentId ?? event.data.agent_id };
    default: {
      const never: never = event.type;
      return never;
    }
  }
}
