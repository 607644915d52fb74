import type { DomainEvent } from '../domain/events.ts';
import type { EventStore } from '../eventstore/port.ts';
import { type Aggregate, type Folder, readAggregate } from './handle-command.ts';

/** A stream's revision being asked for, and the ask that waits for it to end. */
interface Check {
  running: Promise<bigint> | undefined;
  next: Promise<bigint> | undefined;
}

/** Streams whose revisions are asked for together (a store with `streamRevisions`). */
interface Batch {
  readonly streamIds: Set<string>;
  readonly answer: Promise<Map<string, bigint>>;
  readonly resolve: (revisions: Map<string, bigint>) => void;
  readonly reject: (err: unknown) => void;
}

/** The asks under way on one store. */
interface Asks {
  /** By stream, for a store that asks one stream at a time. */
  readonly checks: Map<string, Check>;
  /** A store that asks for several at once: one ask under way at a time, the next gathering. */
  running: boolean;
  gathering: Batch | undefined;
}

/** Every cached aggregate of a store shares its asks. */
const asksOf = new WeakMap<EventStore, Asks>();

const ignore = () => {};

/**
 * The stream's current revision, asked after this call began. Concurrent callers share one ask:
 * a caller that finds an ask already sent waits for it to end and shares the next one (an answer
 * read before the call began could miss a commit made just before it), so under load a revision
 * is asked about once a round trip instead of once a request, and every answer is still read after
 * its caller arrived. On a store that reads several streams' revisions at once (the SQL adapters)
 * the next ask holds every stream asked for meanwhile: one query for the POST's webhook and
 * endpoint and the MCP calls' endpoints together.
 */
export function currentRevision(store: EventStore, streamId: string): Promise<bigint> {
  let asks = asksOf.get(store);
  if (!asks) {
    asks = { checks: new Map(), running: false, gathering: undefined };
    asksOf.set(store, asks);
  }
  if (store.streamRevisions) return askTogether(store, asks, streamId);
  return askAlone(store, asks.checks, streamId);
}

function askTogether(store: EventStore, asks: Asks, streamId: string): Promise<bigint> {
  let batch = asks.gathering;
  if (!batch) {
    let resolve!: Batch['resolve'];
    let reject!: Batch['reject'];
    const answer = new Promise<Map<string, bigint>>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    batch = { streamIds: new Set(), answer, resolve, reject };
    asks.gathering = batch;
    // After the callers of this turn (a POST asks for its webhook and its endpoint at once).
    if (!asks.running) queueMicrotask(() => send(store, asks));
  }
  batch.streamIds.add(streamId);
  return batch.answer.then((revisions) => revisions.get(streamId) ?? -1n);
}

function send(store: EventStore, asks: Asks): void {
  const batch = asks.gathering;
  if (asks.running || !batch) return;
  asks.gathering = undefined;
  asks.running = true;
  const streamIds = [...batch.streamIds];
  store.streamRevisions!(streamIds)
    .then(
      (revisions) => batch.resolve(new Map(streamIds.map((id, i) => [id, revisions[i] ?? -1n]))),
      batch.reject,
    )
    .then(() => {
      asks.running = false;
      send(store, asks);
    });
}

function askAlone(store: EventStore, all: Map<string, Check>, streamId: string): Promise<bigint> {
  let check = all.get(streamId);
  if (!check) {
    check = { running: undefined, next: undefined };
    all.set(streamId, check);
  }
  const c = check;
  const run = (): Promise<bigint> => {
    const asked = store.streamInfo(streamId).then((info) => info.revision);
    c.running = asked;
    const done = () => {
      if (c.running === asked) c.running = undefined;
      if (!c.running && !c.next && all.get(streamId) === c) all.delete(streamId);
    };
    asked.then(done, done);
    return asked;
  };
  if (!c.running) return run();
  c.next ??= c.running.then(ignore, ignore).then(() => {
    c.next = undefined;
    return run();
  });
  return c.next;
}

/**
 * An aggregate folded once and kept, checked against its stream's current revision on every load:
 * a stream's events never change, so the same revision is the same state. A load costs one small
 * query (the revision, shared by the loads that wait for it together: `currentRevision`) instead
 * of reading and decoding every event of the stream, and it is exactly as fresh as reading the
 * stream: a state older than the stream's revision is never returned, so a revoke, a rotation or a
 * rule change is seen by the first load after its commit. A stream that retention truncates is not
 * for this (its events change under the same revision).
 */
export function createCachedAggregate<S, E extends DomainEvent>(
  store: EventStore,
  decider: Folder<S, E>,
  options: { readonly max?: number } = {},
) {
  const max = options.max ?? 10_000;
  const kept = new Map<string, Aggregate<S>>();

  /** The aggregate as kept, unchecked: valid only while its stream is still at its revision. */
  const peek = (streamId: string): Aggregate<S> | undefined => kept.get(streamId);

  return Object.assign(load, { peek });

  async function load(streamId: string): Promise<Aggregate<S>> {
    const held = kept.get(streamId);
    if (held) {
      const revision = await currentRevision(store, streamId);
      if (revision === held.revision) return held;
    }
    const fresh = await readAggregate(store, streamId, decider);
    if (fresh.revision < 0n) {
      kept.delete(streamId);
      return fresh;
    }
    if (!held && kept.size >= max) kept.delete(kept.keys().next().value!);
    kept.set(streamId, fresh);
    return fresh;
  }
}
