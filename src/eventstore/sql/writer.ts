import { sql } from 'kysely';
import {
  appendBatchSize,
  appendCommitSeconds,
  appendConnectSeconds,
  appendQueueSeconds,
} from '../../metrics/instruments.ts';
import {
  type AppendedEvent,
  type AppendResult,
  type ContentType,
  DuplicateKeyError,
  type ExpectedRevision,
  STAMP_WIDTH,
  StoreUnavailableError,
  WrongExpectedVersionError,
} from '../port.ts';
import { isConnectionError, isTransientConflict, isUnreachable } from './errors.ts';
import { formatPosition } from './positions.ts';
import type { AnyDb } from './reads.ts';

/**
 * Group commit. Concurrent append() calls queue up and are written together in one transaction,
 * one round trip: each append is checked on its own against the revision the appends before it
 * left, and the events of those that passed are inserted together. A wrong expected revision fails
 * that append alone. Appends to one stream apply in call order: a stream that is in a batch in
 * flight is not taken into another until that one ends. An atomic append (appendAtomic: several
 * streams, all or none) is one unit of the queue and one group in the batch.
 */

export interface PreparedEvent {
  readonly id: string;
  readonly type: string;
  readonly data: Uint8Array;
  readonly metadata: Uint8Array | null;
  readonly contentType: ContentType;
  /** A stamp (port.ts, RevisionStamp) with `part`: the index of the named part in its atomic append. */
  readonly stamp: { readonly part: number; readonly add: number; readonly offset: number } | null;
  /** EventData.uniqueKey. */
  readonly uniqueKey: string | null;
}

/** One stream's part of an append. */
export interface StreamWrite {
  readonly streamId: string;
  readonly events: readonly PreparedEvent[];
  readonly expected: ExpectedRevision;
}

/** A unit of the queue: one append, or an atomic append of several parts (all or none). */
interface PendingAppend {
  readonly parts: readonly StreamWrite[];
  readonly bytes: number;
  readonly eventCount: number;
  /** performance.now() when it was queued. */
  readonly queuedAt: number;
  readonly resolve: (results: AppendResult[]) => void;
  readonly reject: (err: unknown) => void;
}

type Outcome =
  | { readonly results: { readonly last: bigint; position: string | null }[] }
  | { readonly error: Error };

export interface WriterOptions {
  readonly db: AnyDb;
  /** Batches written at once on separate connections. */
  readonly maxInFlight: number;
  /** PostgreSQL: NOTIFY this channel inside each append transaction, to wake other processes' readers. */
  readonly notifyChannel: string | undefined;
  /** Identifies this store's own notifications, which its listener ignores. */
  readonly notifyPayload: string;
  /**
   * Called after each commit with the number of events written and the position of the newest
   * (undefined when nothing was written), to wake this process's readers.
   */
  readonly onCommitted: (events: number, newest: string | undefined) => void;
  /**
   * Told of each append (each part of an atomic one) once its batch has committed, before its
   * caller hears of it, with its events as the store now holds them (stamps written in).
   */
  readonly onAppended?: (streamId: string, events: readonly AppendedEvent[]) => void;
  /** Resolves an empty append's position (it writes nothing). */
  readonly lastPositionOf: (streamId: string) => Promise<string>;
  readonly maxBatchBytes?: number;
  readonly maxBatchEvents?: number;
  /** Distinct streams in one batch: each is one advisory lock of the batch's transaction. */
  readonly maxBatchStreams?: number;
}

export interface AppendWriter {
  append(
    streamId: string,
    events: readonly PreparedEvent[],
    expected: ExpectedRevision,
  ): Promise<AppendResult>;
  /** The parts in one transaction, all or none: a wrong expected revision in one fails them all. */
  appendAtomic(parts: readonly StreamWrite[]): Promise<AppendResult[]>;
  /** Resolves when nothing is queued or in flight. */
  drain(): Promise<void>;
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function createAppendWriter(options: WriterOptions): AppendWriter {
  const maxBatchBytes = options.maxBatchBytes ?? 8 * 1024 * 1024;
  const maxBatchEvents = options.maxBatchEvents ?? 2000;
  // PostgreSQL's shared lock table has room for 64 locks (max_locks_per_transaction) a connection
  // on average: two batches of at most 256 streams each stay well inside it.
  const maxBatchStreams = options.maxBatchStreams ?? 256;
  let queue: PendingAppend[] = [];
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

  /**
   * Takes the next batch in one pass over the queue. An append whose stream is in a batch in
   * flight stays queued, and so does one past the batch's bounds together with its stream's later
   * appends: each stream's appends are written in call order. (Sharing one burst out over several
   * connections was measured slower: smaller batches, more commits.)
   */
  function take(): PendingAppend[] {
    const batch: PendingAppend[] = [];
    const rest: PendingAppend[] = [];
    const held = new Set(busy);
    const streams = new Set<string>();
    let bytes = 0;
    let events = 0;
    for (const p of queue) {
      const fits =
        batch.length === 0 ||
        (bytes + p.bytes <= maxBatchBytes &&
          events + p.eventCount <= maxBatchEvents &&
          streams.size + p.parts.length <= maxBatchStreams);
      if (!fits || p.parts.some((w) => held.has(w.streamId))) {
        for (const w of p.parts) held.add(w.streamId);
        rest.push(p);
        continue;
      }
      batch.push(p);
      for (const w of p.parts) {
        busy.add(w.streamId);
        streams.add(w.streamId);
      }
      bytes += p.bytes;
      events += p.eventCount;
    }
    queue = rest;
    const now = performance.now();
    for (const p of batch) appendQueueSeconds.observe((now - p.queuedAt) / 1000);
    return batch;
  }

  function dispatch(): void {
    scheduled = false;
    while (inFlight < options.maxInFlight && queue.length > 0) {
      const batch = take();
      if (batch.length === 0) break;
      inFlight++;
      void run(batch).finally(() => {
        inFlight--;
        for (const p of batch) for (const w of p.parts) busy.delete(w.streamId);
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
      try {
        const outcomes = await writeBatch(options, batch);
        appendBatchSize.observe(batch.length);
        let newest: string | undefined;
        for (const o of outcomes) {
          if ('error' in o) continue;
          for (const r of o.results) if (r.position !== null) newest = r.position; // one transaction: the last is the newest
        }
        options.onCommitted(
          batch.reduce((n, p, i) => n + ('error' in outcomes[i]! ? 0 : p.eventCount), 0),
          newest,
        );
        await settle(batch, outcomes);
        return;
      } catch (err) {
        if (isTransientConflict(err) && attempt < 5) continue;
        // The batch never reached the server (no connection could be made): it may run again.
        if (isUnreachable(err) && attempt < 3) {
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
        const results: AppendResult[] = [];
        for (let j = 0; j < p.parts.length; j++) {
          const r = o.results[j]!;
          const position = r.position ?? (await options.lastPositionOf(p.parts[j]!.streamId));
          results.push({ nextExpectedRevision: r.last, position });
        }
        if (options.onAppended) {
          for (const w of p.parts) options.onAppended(w.streamId, committedEvents(w, p.parts, o.results));
        }
        p.resolve(results);
      } catch (err) {
        p.reject(err);
      }
    }
  }

  function enqueue(parts: readonly StreamWrite[]): Promise<AppendResult[]> {
    let bytes = 0;
    let eventCount = 0;
    for (const w of parts) {
      eventCount += w.events.length;
      for (const e of w.events) bytes += e.data.byteLength + (e.metadata?.byteLength ?? 0);
    }
    return new Promise<AppendResult[]>((resolve, reject) => {
      queue.push({ parts, bytes, eventCount, queuedAt: performance.now(), resolve, reject });
      schedule();
    });
  }

  return {
    async append(streamId, events, expected) {
      const [result] = await enqueue([{ streamId, events, expected }]);
      return result!;
    },
    appendAtomic(parts) {
      if (parts.length === 0) return Promise.resolve([]);
      return enqueue(parts);
    },
    drain() {
      if (queue.length === 0 && inFlight === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
  };
}

/**
 * A part's events (port.ts, AppendedEvent) as es_append_batch wrote them: a stamp is the revision of the first event of
 * the part it names, plus its `add`, as text padded with spaces to STAMP_WIDTH (rpad in the
 * function), over the spaces it was given.
 */
function committedEvents(
  w: StreamWrite,
  parts: readonly StreamWrite[],
  results: readonly { readonly last: bigint }[],
): AppendedEvent[] {
  return w.events.map((e) => {
    if (!e.stamp) return { id: e.id, type: e.type, data: e.data };
    const named = parts[e.stamp.part]!;
    const first = results[e.stamp.part]!.last - BigInt(named.events.length) + 1n;
    const text = String(first + BigInt(e.stamp.add)).padEnd(STAMP_WIDTH, ' ');
    const data = Uint8Array.from(e.data);
    for (let i = 0; i < STAMP_WIDTH; i++) data[e.stamp.offset + i] = text.charCodeAt(i);
    return { id: e.id, type: e.type, data };
  });
}

/**
 * The bytes of a batch's events as one buffer with each event's offset and length (a null length
 * for a null value): one bytea parameter, sent in binary, instead of a text array of hex strings.
 */
function packer() {
  const parts: Uint8Array[] = [];
  const offsets: number[] = [];
  const lengths: Array<number | null> = [];
  let size = 0;
  return {
    offsets,
    lengths,
    push(bytes: Uint8Array | null): void {
      offsets.push(size);
      lengths.push(bytes ? bytes.byteLength : null);
      if (!bytes) return;
      parts.push(bytes);
      size += bytes.byteLength;
    },
    bytes: (): Buffer => Buffer.concat(parts, size),
  };
}

/**
 * One batch in one call of es_append_batch (migrations/20261125009100_event_store_stamps.ts):
 * a single round trip and its own transaction, where the
 * checks, the locks and the writes happen.
 * The parts of an atomic append share a group number (1-based index of the unit; 0 for a lone
 * append), and the function passes or fails a group as a whole.
 */
async function writeBatch(options: WriterOptions, batch: readonly PendingAppend[]): Promise<Outcome[]> {
  const appends = {
    stream: [] as string[],
    expected: [] as string[],
    count: [] as number[],
    group: [] as number[],
  };
  const events = {
    id: [] as string[],
    type: [] as string[],
    contentType: [] as string[],
    uniqueKey: [] as Array<string | null>,
  };
  let keyed = false;
  const stamps = {
    part: [] as Array<number | null>,
    add: [] as Array<number | null>,
    offset: [] as Array<number | null>,
  };
  const data = packer();
  const metadata = packer();
  batch.forEach((p, unit) => {
    // The 1-based index in the batch's appends of this unit's first part: what a stamp names.
    const first = appends.stream.length + 1;
    for (const w of p.parts) {
      appends.stream.push(w.streamId);
      appends.expected.push(String(w.expected));
      appends.count.push(w.events.length);
      appends.group.push(p.parts.length > 1 ? unit + 1 : 0);
      for (const e of w.events) {
        events.id.push(e.id);
        events.type.push(e.type);
        events.contentType.push(e.contentType);
        events.uniqueKey.push(e.uniqueKey);
        if (e.uniqueKey !== null) keyed = true;
        data.push(e.data);
        metadata.push(e.metadata);
        stamps.part.push(e.stamp ? first + e.stamp.part : null);
        stamps.add.push(e.stamp ? e.stamp.add : null);
        stamps.offset.push(e.stamp ? e.stamp.offset : null);
      }
    }
  });
  const query = sql<{
    ok: boolean;
    conflict: boolean;
    revision: string;
    transaction_id: string | null;
    global_position: string | null;
    duplicate_key: string | null;
    holder_stream: string | null;
    holder_revision: string | null;
  }>`
    select ok, conflict, revision::text as revision, transaction_id, global_position,
      duplicate_key, holder_stream, holder_revision::text as holder_revision
    from es_append_batch(
      ${appends.stream}::text[], ${appends.expected}::text[], ${appends.count}::int[], ${appends.group}::int[],
      ${events.id}::uuid[], ${events.type}::text[], ${events.contentType}::text[],
      ${data.bytes()}::bytea, ${data.offsets}::int[], ${data.lengths}::int[],
      ${metadata.bytes()}::bytea, ${metadata.offsets}::int[], ${metadata.lengths}::int[],
      ${options.notifyChannel ?? null}::text, ${options.notifyPayload}::text,
      ${stamps.part}::int[], ${stamps.add}::int[], ${stamps.offset}::int[],
      ${keyed ? events.uniqueKey : null}::text[])`;
  // The connection is taken first, so that the wait for it and the call are timed apart.
  const asked = performance.now();
  const { rows } = await options.db.connection().execute(async (connection) => {
    const connected = performance.now();
    appendConnectSeconds.observe((connected - asked) / 1000);
    const result = await query.execute(connection);
    appendCommitSeconds.observe((performance.now() - connected) / 1000);
    return result;
  });
  if (rows.length !== appends.stream.length)
    throw new Error(`es_append_batch answered ${rows.length} of ${appends.stream.length} appends`);
  let row = 0;
  return batch.map((p): Outcome => {
    const parts = rows.slice(row, row + p.parts.length);
    row += p.parts.length;
    const conflict = parts.findIndex((r) => r.conflict);
    if (conflict >= 0) {
      const w = p.parts[conflict]!;
      return {
        error: new WrongExpectedVersionError(w.streamId, w.expected, BigInt(parts[conflict]!.revision)),
      };
    }
    const duplicate = parts.find((r) => r.duplicate_key !== null);
    if (duplicate) {
      const holder =
        duplicate.holder_stream === null || duplicate.holder_revision === null
          ? undefined
          : { streamId: duplicate.holder_stream, revision: BigInt(duplicate.holder_revision) };
      return { error: new DuplicateKeyError(duplicate.duplicate_key!, holder) };
    }
    if (parts.some((r) => !r.ok)) throw new Error('es_append_batch refused an append without a conflict');
    return {
      results: parts.map((r, j) => {
        const revision = BigInt(r.revision);
        if (r.transaction_id === null || r.global_position === null) {
          // Only an empty append writes nothing; its position is looked up after the batch.
          if (p.parts[j]!.events.length > 0)
            throw new Error('es_append_batch wrote no event for an append it accepted');
          return { last: revision, position: null };
        }
        return { last: revision, position: formatPosition(r.transaction_id, r.global_position) };
      }),
    };
  });
}
