import { DELIVERIES_STREAM } from '../domain/delivery/events.ts';
import { doorbellStream } from '../domain/endpoint/events.ts';
import type { DomainEvent } from '../domain/events.ts';
import { QUARANTINE } from '../domain/queue.ts';
import { type CreateTodo, todoDecider } from '../domain/todo/decide.ts';
import { todoStream } from '../domain/todo/events.ts';
import type { TodoState } from '../domain/todo/state.ts';
import { encodeEvent, stampedEvent } from '../eventstore/codec.ts';
import {
  type EventData,
  type EventStore,
  isWrongExpectedVersion,
  type StreamAppend,
} from '../eventstore/port.ts';
import { doorbellRung } from './doorbell.ts';

/**
 * The hand-off of a delivery to an agent (issue 23): its todo, the ring of the endpoint's doorbell
 * and any further fact about the delivery (a webhook's disposition), appended in one transaction,
 * and, for a new delivery, in the same one as the delivery itself, inside the group commit that
 * batches concurrent deliveries. So a hand-off costs a share of one batch, not four commits one
 * after the other, and there is no moment at which a delivery is in the log without its todo.
 *
 * Each of these events names the delivery by its event id (the `deliveries` revision + 1). For a
 * delivery appended in the same transaction nobody knows it yet: the store stamps it in
 * (port.ts, RevisionStamp). EventStoreDB has no multi-stream transaction; there the parts are
 * appended one after another once the delivery is durable (`appendInTurn`).
 */

/** A fact about the delivery that names it by `event_id` (a disposition). */
export interface DeliveryFact {
  readonly streamId: string;
  readonly event: DomainEvent & { readonly data: { readonly event_id: number } };
}

export interface HandOff {
  /** The todo to create; null when none is (a delivery a rule dropped). */
  readonly todo: Omit<CreateTodo, 'type' | 'eventId'> | null;
  readonly facts: readonly DeliveryFact[];
}

/** The delivery's event id: known, or `stamped` when the delivery is appended with the hand-off. */
export type EventIdOf = number | 'stamped';

/** The delivery's event id is its `deliveries` revision + 1. */
const FROM_DELIVERY = { streamId: DELIVERIES_STREAM, add: 1 } as const;

function withEventId(event: DomainEvent & { readonly data: object }, eventId: EventIdOf): EventData {
  if (eventId === 'stamped')
    return stampedEvent(event as { type: string; data: Record<string, unknown> }, 'event_id', FROM_DELIVERY);
  return encodeEvent({ ...event, data: { ...event.data, event_id: eventId } });
}

/**
 * The appends of a hand-off, in order: the todo (`no_stream`: of racing writers of one todo id,
 * one wins), its ring (a todo held in quarantine rings nothing, spec 3), the facts.
 */
export function handOffAppends(handOff: HandOff, eventId: EventIdOf, now: Date): StreamAppend[] {
  const appends: StreamAppend[] = [];
  const { todo } = handOff;
  if (todo) {
    const [created] = todoDecider.decide(
      { type: 'CreateTodo', ...todo, eventId: 0 },
      todoDecider.initialState(),
      now,
    );
    appends.push({
      streamId: todoStream(todo.todoId),
      events: [withEventId(created!, eventId)],
      options: { expectedRevision: 'no_stream' },
    });
    if (todo.queue !== QUARANTINE) {
      const ring = { endpointId: todo.endpoint.id, queue: todo.queue, todoId: todo.todoId, eventId: 0 };
      appends.push({
        streamId: doorbellStream(todo.endpoint.id),
        events: [withEventId(doorbellRung(ring, now), eventId)],
      });
    }
  }
  for (const fact of handOff.facts)
    appends.push({ streamId: fact.streamId, events: [withEventId(fact.event, eventId)] });
  return appends;
}

/**
 * The todo's state as its creation in this hand-off leaves it (revision 0), naming the delivery's
 * event id once the append has told it: what reading the new stream back would fold to.
 */
export function handedOffTodo(handOff: HandOff, eventId: number, now: Date): TodoState | undefined {
  const { todo } = handOff;
  if (!todo) return undefined;
  const initial = todoDecider.initialState();
  const [created] = todoDecider.decide({ type: 'CreateTodo', ...todo, eventId }, initial, now);
  return created ? todoDecider.evolve(initial, created) : undefined;
}

/** Whether this store writes a hand-off with its delivery in one transaction. */
export const handsOffAtomically = (store: EventStore): boolean => store.appendAtomic !== undefined;

/**
 * The hand-off of a delivery already in the log (its event id known): in one transaction where the
 * store has one, else one append after another, each step named first. False when the todo exists
 * already (another writer handed it off): then nothing was written.
 */
export async function appendHandOff(
  store: EventStore,
  handOff: HandOff,
  eventId: number,
  now: Date,
  step: (awaited: string) => void = () => {},
): Promise<boolean> {
  const appends = handOffAppends(handOff, eventId, now);
  const todoStreamId = handOff.todo ? todoStream(handOff.todo.todoId) : undefined;
  const taken = (err: unknown) => isWrongExpectedVersion(err) && err.streamId === todoStreamId;
  if (store.appendAtomic) {
    step(describe(handOff, eventId));
    try {
      await store.appendAtomic(appends);
    } catch (err) {
      if (taken(err)) return false;
      throw err;
    }
    return true;
  }
  for (const a of appends) {
    step(describeAppend(a, handOff, eventId));
    try {
      await store.append(a.streamId, a.events, a.options);
    } catch (err) {
      if (taken(err)) return false;
      throw err;
    }
  }
  return true;
}

function describe(handOff: HandOff, eventId: number): string {
  const { todo } = handOff;
  if (!todo) return `the disposition of event ${eventId} (dropped)`;
  return `the todo ${todo.todoId} of event ${eventId}, its doorbell (endpoint ${todo.endpoint.id}, queue ${todo.queue})${handOff.facts.length > 0 ? ' and its disposition' : ''}`;
}

function describeAppend(a: StreamAppend, handOff: HandOff, eventId: number): string {
  const { todo } = handOff;
  if (todo && a.streamId === todoStream(todo.todoId)) return `the todo ${todo.todoId} of event ${eventId}`;
  if (todo && a.streamId === doorbellStream(todo.endpoint.id))
    return `the doorbell of endpoint ${todo.endpoint.id} (queue ${todo.queue}, todo ${todo.todoId})`;
  return `the disposition of event ${eventId}${todo ? ` (todo ${todo.todoId})` : ' (dropped)'}`;
}
