import { parseData } from '../../eventstore/codec.ts';
import { type EventStore, type RecordedEvent, StreamNotFoundError } from '../../eventstore/port.ts';

/** A domain event as the deciders see it: the store's type name and its parsed JSON data. */
export interface DomainEvent {
  readonly type: string;
  readonly data: unknown;
}

export interface Loaded<S> {
  readonly state: S;
  /** The stream's revision as read (-1n: no stream); the append's expected revision. */
  readonly revision: bigint;
}

/**
 * Folds one aggregate's stream (design.md: decisions read the aggregate's own stream and append
 * with its revision). `accepts` names the event types this aggregate knows; others are skipped
 * so that an older process reading a stream written by a newer one does not fail.
 */
export async function loadAggregate<S, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  initial: S,
  evolve: (state: S, event: E) => S,
  accepts: (type: string) => boolean,
): Promise<Loaded<S>> {
  let state = initial;
  let revision = -1n;
  try {
    for await (const recorded of store.readStream(streamId)) {
      revision = recorded.revision;
      if (accepts(recorded.type)) state = evolve(state, toDomainEvent(recorded) as E);
    }
  } catch (err) {
    if (err instanceof StreamNotFoundError) return { state: initial, revision: -1n };
    throw err;
  }
  return { state, revision };
}

export const toDomainEvent = (recorded: RecordedEvent): DomainEvent => ({
  type: recorded.type,
  data: parseData(recorded),
});

/** `no_stream` for a stream read as absent, else the revision read. */
export const expectedFrom = (revision: bigint): 'no_stream' | bigint =>
  revision < 0n ? 'no_stream' : revision;
