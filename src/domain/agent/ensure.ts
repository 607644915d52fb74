import type { Clock } from '../../clock.ts';
import { jsonEvent } from '../../eventstore/codec.ts';
import { type EventStore, isWrongExpectedVersion } from '../../eventstore/port.ts';
import { expectedFrom, loadAggregate } from '../endpoint/aggregate.ts';
import { newId } from '../endpoint/ids.ts';
import {
  type AgentState,
  agentNameReserved,
  agentNameStream,
  agentStream,
  decideRegisterAgent,
  evolveAgent,
  initialAgentState,
} from './decide.ts';
import type { AgentNameEvent } from './events.ts';
import { isAgentEventType } from './events.ts';

export interface EnsuredAgent {
  readonly agentId: string;
  readonly name: string;
  /** False when an agent of that name already existed for the operator and is reused. */
  readonly created: boolean;
}

const MAX_ATTEMPTS = 8;

/**
 * One agent per (operator, name): the pair is reserved first (expected revision `no_stream`),
 * then the agent registered. A process that died between the two leaves a reservation without
 * an agent; the next vend under that name registers it.
 */
export async function ensureAgent(
  deps: { readonly store: EventStore; readonly clock: Clock },
  input: { readonly operator: string; readonly name: string },
): Promise<EnsuredAgent> {
  const { store, clock } = deps;
  const nameStream = agentNameStream(input.operator, input.name);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const reservation = await loadAggregate<string | undefined, AgentNameEvent>(
      store,
      nameStream,
      undefined,
      (held, e) => held ?? e.data.agent_id,
      (t) => t === 'AgentNameReserved',
    );
    let agentId = reservation.state;
    if (agentId === undefined) {
      agentId = newId('ag');
      try {
        await store.append(nameStream, [eventOf(agentNameReserved(agentId, input.operator, input.name))], {
          expectedRevision: 'no_stream',
        });
      } catch (err) {
        if (isWrongExpectedVersion(err)) continue; // another vend reserved the name first: reuse theirs
        throw err;
      }
    }
    const agent = await loadAggregate<AgentState, Parameters<typeof evolveAgent>[1]>(
      store,
      agentStream(agentId),
      initialAgentState,
      evolveAgent,
      isAgentEventType,
    );
    const events = decideRegisterAgent(
      { agentId, operator: input.operator, name: input.name, description: null },
      agent.state,
      clock.now(),
    );
    if (events.length === 0) return { agentId, name: input.name, created: false };
    try {
      await store.append(agentStream(agentId), events.map(eventOf), {
        expectedRevision: expectedFrom(agent.revision),
      });
      return { agentId, name: input.name, created: true };
    } catch (err) {
      if (isWrongExpectedVersion(err)) continue;
      throw err;
    }
  }
  throw new Error(`could not register agent ${JSON.stringify(input.name)}: too much contention`);
}

const eventOf = (e: { type: string; data: unknown }) => jsonEvent(e.type, e.data);
