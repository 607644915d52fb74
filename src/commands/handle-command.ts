import type { Clock } from '../clock.ts';
import { type DomainEvent, decodeAggregateEvent } from '../domain/events.ts';
import type { Decider } from '../domain/shared.ts';
import { HooklineError } from '../errors.ts';
import { encodeEvent } from '../eventstore/codec.ts';
import {
  type AppendResult,
  type EventStore,
  type ExpectedRevision,
  isWrongExpectedVersion,
  type Position,
  StreamNotFoundError,
} from '../eventstore/port.ts';

/**
 * The one command handler (style.md §13, after emmett's `handleCommand`): read the aggregate's
 * stream, fold it with `evolve`, decide, append with the revision read, and on a conflict (another
 * writer appended first) decide again on the new state, a bounded number of times. Every
 * application service goes through it; none writes that loop again.
 */
export interface CommandDeps {
  readonly store: EventStore;
  readonly clock: Clock;
}

/** What folding needs of a decider. */
export type Folder<S, E extends DomainEvent> = Pick<
  Decider<unknown, S, E>,
  'initialState' | 'evolve' | 'eventTypes'
>;

export interface Aggregate<S> {
  readonly state: S;
  /** The stream's revision as read, -1n when the stream does not exist: the append's expected revision. */
  readonly revision: bigint;
}

/** A decision made by hand instead of by `decider.decide` (it may read more before deciding). */
export type Decide<S, E> = (state: S, now: Date) => E[] | Promise<E[]>;

export interface HandleOptions<S = unknown> {
  /** Conflicts decided again before giving up (default 3). */
  readonly retries?: number;
  /**
   * The stream is new (its id was just minted): decide on the initial state without reading it,
   * and append with `no_stream`. A conflict then means the id was taken.
   */
  readonly newStream?: boolean;
  /** When the retries run out, answer `conflict` with this detail instead of the store's error. */
  readonly conflictMessage?: string;
  /**
   * The aggregate as this process last left it (its own previous command on the stream): the
   * first attempt decides on it without reading, and the append's expected revision proves it was
   * current. A decision on it that appends nothing, refuses, or loses the race is made again on the
   * stream as read, so a kept state that fell behind only costs the read it tried to save.
   */
  readonly known?: Aggregate<S>;
}

export interface CommandResult<S, E> {
  /** The state after the new events (the state read when nothing was appended). */
  readonly state: S;
  /** The events appended; empty when the decision changed nothing. */
  readonly events: readonly E[];
  /** The stream's revision after the append (-1n: still no stream). */
  readonly revision: bigint;
  /** The global position of the append, for read-your-writes; undefined when nothing was appended. */
  readonly position: Position | undefined;
}

const expectedFrom = (revision: bigint): ExpectedRevision => (revision < 0n ? 'no_stream' : revision);

/** Folds one aggregate's stream; every event on it is decoded (and must be one of the decider's types). */
export async function readAggregate<S, E extends DomainEvent>(
  store: EventStore,
  streamId: string,
  decider: Folder<S, E>,
): Promise<Aggregate<S>> {
  let state = decider.initialState();
  let revision = -1n;
  try {
    for await (const recorded of store.readStream(streamId)) {
      revision = recorded.revision;
      state = decider.evolve(state, decodeAggregateEvent(recorded, decider.eventTypes));
    }
  } catch (err) {
    if (err instanceof StreamNotFoundError) return { state: decider.initialState(), revision: -1n };
    throw err;
  }
  return { state, revision };
}

/** Appends events that record facts rather than decisions (a doorbell ring, a disposition): no read, no retry. */
export function appendEvents(
  store: EventStore,
  streamId: string,
  events: readonly DomainEvent[],
  expectedRevision: ExpectedRevision = 'any',
): Promise<AppendResult> {
  return store.append(streamId, events.map(encodeEvent), { expectedRevision });
}

export async function handleCommand<C, S, E extends DomainEvent>(
  deps: CommandDeps,
  streamId: string,
  decider: Decider<C, S, E>,
  command: C | Decide<S, E>,
  options: HandleOptions<S> = {},
): Promise<CommandResult<S, E>> {
  const decide: Decide<S, E> =
    typeof command === 'function'
      ? (command as Decide<S, E>)
      : (state, now) => decider.decide(command, state, now);
  const retries = options.retries ?? 3;
  let known = options.newStream ? undefined : options.known;
  for (let attempt = 0; ; attempt++) {
    const trying = known;
    known = undefined;
    const read: Aggregate<S> = trying
      ? trying
      : options.newStream
        ? { state: decider.initialState(), revision: -1n }
        : await readAggregate(deps.store, streamId, decider);
    let events: E[];
    try {
      events = await decide(read.state, deps.clock.now());
    } catch (err) {
      if (trying) {
        attempt--; // decided on a state that may be behind: again on the stream, as if first
        continue;
      }
      throw err;
    }
    if (events.length === 0) {
      if (trying) {
        attempt--;
        continue;
      }
      return { state: read.state, events, revision: read.revision, position: undefined };
    }
    try {
      const appended = await appendEvents(deps.store, streamId, events, expectedFrom(read.revision));
      return {
        state: events.reduce(decider.evolve, read.state),
        events,
        revision: appended.nextExpectedRevision,
        position: appended.position,
      };
    } catch (err) {
      if (trying && isWrongExpectedVersion(err)) {
        attempt--; // the kept state was behind: not a race lost, decide on the stream
        continue;
      }
      if (!isWrongExpectedVersion(err) || attempt >= retries) {
        if (isWrongExpectedVersion(err) && options.conflictMessage !== undefined) {
          throw new HooklineError('conflict', options.conflictMessage, {}, { cause: err });
        }
        throw err;
      }
    }
  }
}
