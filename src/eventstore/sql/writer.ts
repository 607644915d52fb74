import { sql } from 'kysely';
import {
  type AppendResult,
  type ContentType,
  type ExpectedRevision,
  StoreUnavailableError,
  WrongExpectedVersionError,
} from '../port.ts';
import { isConnectionError, isTransientConflict } from './errors.ts';
import { formatPosition } from './positions.ts';
import type { AnyDb } from './reads.ts';
import { toHex } from './rows.ts';

/**
 * Group commit. Concurrent append() calls queue up and are written together in one transaction:
 * one round trip locks every stream of the batch, each append is checked on its own against the
 * revision the appends before it left, and one multi-row insert writes the events of those that
 * passed. A wrong expected revision fails that append alone. Appends to one stream apply in call
 * order: a stream that is in a batch in flight is not taken into another until that one ends.
 */

export interface PreparedEvent {
  readonly id: string;
  readonly type: string;
  readonly data: Uint8Array;
  readonly metadata: Uint8Array | null;
  readonly contentType: ContentType;
}

interface PendingAppend {
  readonly streamId: string;
  readonly events: readonly PreparedEvent[];
  readonly expected: ExpectedRevision;
  readonly bytes: number;
  readonly resolve: (result: AppendResult) => void;
  readonly reject: (err: unknown) => void;
}

type Outcome = { readonly last: bigint; position: string | null } | { readonly error: Error };

export interface WriterOptions {
  readonly db: AnyDb;
  /** Batches written at once on separate connections (1 on PGlite: it has one connection). */
  readonly maxInFlight: number;
  /** PostgreSQL: NOTIFY this channel inside each append transaction, to wake other processes' readers. */
  readonly notifyChannel: string | undefined;
  /** Identifies this store's own notifications, which its listener ignores. */
  readonly notifyPayload: string;
  /** Called after each commit with the number of events written, to wake this process's readers. */
  readonly onCommitted: (events: number) => void;
  /** Resolves an empty append's position (it writes nothing). */
  readonly lastPositionOf: (streamId: string) => Promise<string>;
  readonly maxBatchBytes?: number;
  readonly maxBatchEvents?: number;
}

export interface AppendWriter {
  append(
    streamId: string,
    events: readonly PreparedEvent[],
    expected: ExpectedRevision,
  ): Promise<AppendResult>;
  /** Resolves when nothing is queued or in flight. */
  drain(): Promise<void>;
}

export function matchesExpected(expected: ExpectedRevision, current: bigint): boolean {
  if (expected === 'any') return true;
  if (expected === 'no_stream') return current === -1n;
  if (expected === 'stream_exists') return current >= 0n;
  return current === expected;
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function createAppendWriter(options: WriterOptions): AppendWriter {
  const maxBatchBytes = options.maxBatchBytes ?? 8 * 1024 * 1024;
  const maxBatchEvents = options.maxBatchEvents ?? 2000;
  const queue: PendingAppend[] = [];
  const busy = new Set<string>();
  let inFlight = 0;
  let scheduled = false;
  let idleWaiters: Array<() => void> = [];

  function schedule(): void {
    if (scheduled || queue.length === 0 || inFlight >= options.maxInFlight) return;
    scheduled = true;
    // setImmediate, not a microtask: lets every caller woken by the previous commit queue up first.
    setImmediate(dispatch);
  }

  function take(): PendingAppend[] {
    const batch: PendingAppend[] = [];
    const blocked = new Set(busy);
    let bytes = 0;
    let events = 0;
    for (let i = 0; i < queue.length; ) {
      const p = queue[i]!;
      if (blocked.has(p.streamId)) {
        i++;
        continue;
      }
      if (batch.length > 0 && (bytes + p.bytes > maxBatchBytes || events + p.events.length > maxBatchEvents))
        break;
      queue.splice(i, 1);
      batch.push(p);
      bytes += p.bytes;
      events += p.events.length;
    }
    for (const p of batch) busy.add(p.streamId);
    return batch;
  }

  function dispatch(): void {
    scheduled = false;
    while (inFlight < options.maxInFlight && queue.length > 0) {
      // With several connections free, share the queue out so the batches overlap.
      const batch = take();
      if (batch.length === 0) break;
      inFlight++;
      void run(batch).finally(() => {
        inFlight--;
        for (const p of batch) busy.delete(p.streamId);
        if (queue.length === 0 && inFlight === 0) {
          const waiters = idleWaiters;
          idleWaiters = [];
          for (const w of waiters) w();
        }
        schedule();
      });
    }
  }

  async function run(batch: PendingAppend[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const progress = { committing: false };
      try {
        const outcomes = await writeBatch(options, batch, progress);
        options.onCommitted(
          batch.reduce((n, p, i) => n + ('error' in outcomes[i]! ? 0 : p.events.length), 0),
        );
        await settle(batch, outcomes);
        return;
      } catch (err) {
        if (isTransientConflict(err) && attempt < 5) continue;
        // Nothing reached COMMIT: the transaction rolled back, the batch may run again.
        if (isConnectionError(err) && !progress.committing && attempt < 3) {
          await delay(50 * attempt);
          continue;
        }
        if (isConnectionError(err)) {
          const unavailable = new StoreUnavailableError('the event store database is unreachable', {
            cause: err,
          });
          for (const p of batch) p.reject(unavailable);
          return;
        }
        if (batch.length > 1) {
          // An error that is neither a conflict nor a lost connection belongs to one append:
          // write them one by one so it fails alone.
          for (const p of batch) await run([p]);
          return;
        }
        batch[0]!.reject(err);
        return;
      }
    }
  }

  async function settle(batch: PendingAppend[], outcomes: Outcome[]): Promise<void> {
    for (let i = 0; i < batch.length; i++) {
      const p = batch[i]!;
      const o = outcomes[i]!;
      if ('error' in o) {
        p.reject(o.error);
        continue;
      }
      try {
        const position = o.position ?? (await options.lastPositionOf(p.streamId));
        p.resolve({ nextExpectedRevision: o.last, position });
      } catch (err) {
        p.reject(err);
      }
    }
  }

  return {
    append(streamId, events, expected) {
      let bytes = 0;
      for (const e of events) bytes += e.data.byteLength + (e.metadata?.byteLength ?? 0);
      return new Promise<AppendResult>((resolve, reject) => {
        queue.push({ streamId, events, expected, bytes, resolve, reject });
        schedule();
      });
    },
    drain() {
      if (queue.length === 0 && inFlight === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
  };
}

async function writeBatch(
  options: WriterOptions,
  batch: readonly PendingAppend[],
  progress: { committing: boolean },
): Promise<Outcome[]> {
  // One lock order for every process (sorted ids, inserted in array order): no deadlock between batches.
  const streamIds = [...new Set(batch.map((p) => p.streamId))].sort();
  return options.db.transaction().execute(async (trx) => {
    // Creates missing stream rows (revision -1) and locks all of them in one round trip; under
    // READ COMMITTED the returned revision is the latest committed one.
    const locked = await sql<{ stream_id: string; revision: string }>`
      insert into es_streams (stream_id, revision)
      select s, -1 from unnest(${streamIds}::text[]) as s
      on conflict (stream_id) do update set revision = es_streams.revision
      returning stream_id, revision::text as revision`.execute(trx);
    const current = new Map(locked.rows.map((r) => [r.stream_id, BigInt(r.revision)]));

    const outcomes: Outcome[] = [];
    const rows = {
      stream: [] as string[],
      revision: [] as string[],
      id: [] as string[],
      type: [] as string[],
      contentType: [] as string[],
      data: [] as string[],
      metadata: [] as Array<string | null>,
    };
    for (const p of batch) {
      const revision = current.get(p.streamId) ?? -1n;
      if (!matchesExpected(p.expected, revision)) {
        outcomes.push({ error: new WrongExpectedVersionError(p.streamId, p.expected, revision) });
        continue;
      }
      let next = revision;
      for (const e of p.events) {
        next += 1n;
        rows.stream.push(p.streamId);
        rows.revision.push(next.toString());
        rows.id.push(e.id);
        rows.type.push(e.type);
        rows.contentType.push(e.contentType);
        rows.data.push(toHex(e.data));
        rows.metadata.push(e.metadata ? toHex(e.metadata) : null);
      }
      current.set(p.streamId, next);
      outcomes.push({ last: next, position: null });
    }

    if (rows.stream.length > 0) {
      const touched = [...new Set(rows.stream)];
      const notify = options.notifyChannel
        ? sql`cross join (select pg_notify(${options.notifyChannel}, ${options.notifyPayload})) as n`
        : sql``;
      const inserted = await sql<{ stream_id: string; revision: string; tx: string; gp: string }>`
        with ins as (
          insert into es_events (stream_id, revision, event_id, event_type, content_type, data, metadata)
          select s, r, i, t, c, decode(d, 'hex'), decode(m, 'hex')
          from unnest(${rows.stream}::text[], ${rows.revision}::bigint[], ${rows.id}::uuid[],
            ${rows.type}::text[], ${rows.contentType}::text[], ${rows.data}::text[], ${rows.metadata}::text[])
            as u(s, r, i, t, c, d, m)
          returning stream_id, revision, transaction_id, global_position
        ), upd as (
          update es_streams s set revision = u.revision
          from unnest(${touched}::text[], ${touched.map((s) => current.get(s)!.toString())}::bigint[]) as u(stream_id, revision)
          where s.stream_id = u.stream_id
        )
        select stream_id, revision::text as revision, transaction_id::text as tx, global_position::text as gp
        from ins ${notify}`.execute(trx);
      const positions = new Map(
        inserted.rows.map((r) => [`${r.stream_id}\u0000${r.revision}`, formatPosition(r.tx, r.gp)]),
      );
      for (let i = 0; i < batch.length; i++) {
        const o = outcomes[i]!;
        if ('error' in o || batch[i]!.events.length === 0) continue;
        o.position = positions.get(`${batch[i]!.streamId}\u0000${o.last}`) ?? null;
      }
    }
    progress.committing = true;
    return outcomes;
  });
}
