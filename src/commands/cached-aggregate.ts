import type { DomainEvent } from '../domain/events.ts';
import type { EventStore } from '../eventstore/port.ts';
import { type Aggregate, type Folder, readAggregate } from './handle-command.ts';

/**
 * An aggregate folded once and kept, checked against its stream's current revision on every load:
 * a stream's events never change, so the same revision is the same state. A load costs one small
 * query (the revision) instead of reading and decoding every event of the stream, and it is exactly
 * as fresh as reading the stream: a state older than the stream's revision is never returned, so a
 * revoke, a rotation or a rule change is seen by the first load after its commit. A stream that
 * retention truncates is not for this (its events change under the same revision).
 */
export function createCachedAggregate<S, E extends DomainEvent>(
  store: EventStore,
  decider: Folder<S, E>,
  options: { readonly max?: number } = {},
) {
  const max = options.max ?? 10_000;
  const kept = new Map<string, Aggregate<S>>();

  return async function load(streamId: string): Promise<Aggregate<S>> {
    const held = kept.get(streamId);
    if (held) {
      const { revision } = await store.streamInfo(streamId);
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
  };
}
