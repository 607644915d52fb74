import type { Decider } from '../shared.ts';
import { AGENT_EVENT_TYPES, AGENT_NAME_EVENT_TYPES, type AgentEvent, type AgentNameEvent } from './events.ts';
import {
  type AgentNameState,
  type AgentState,
  evolveAgent,
  evolveAgentName,
  initialAgentNameState,
  initialAgentState,
} from './state.ts';

export interface RegisterAgent {
  readonly type: 'RegisterAgent';
  readonly agentId: string;
  readonly operator: string;
  readonly name: string;
  readonly description: string | null;
}

/** Registering is idempotent: an agent that exists already yields no event. */
export function decideAgent(command: RegisterAgent, state: AgentState, now: Date): AgentEvent[] {
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

export const agentDecider: Decider<RegisterAgent, AgentState, AgentEvent> = {
  initialState: initialAgentState,
  evolve: evolveAgent,
  decide: decideAgent,
  eventTypes: AGENT_EVENT_TYPES,
};

export interface ReserveAgentName {
  readonly type: 'ReserveAgentName';
  readonly agentId: string;
  readonly operator: string;
  readonly name: string;
}

/** The first reservation holds the name; a later one changes nothing (the caller reuses the holder). */
export function decideAgentName(command: ReserveAgentName, state: AgentNameState): AgentNameEvent[] {
  if (state.agentId !== null) return [];
  return [
    {
      type: 'AgentNameReserved',
      data: { agent_id: command.agentId, operator: command.operator, name: command.name },
    },
  ];
}

export const agentNameDecider: Decider<ReserveAgentName, AgentNameState, AgentNameEvent> = {
  initialState: initialAgentNameState,
  evolve: evolveAgentName,
  decide: decideAgentName,
  eventTypes: AGENT_NAME_EVENT_TYPES,
};
