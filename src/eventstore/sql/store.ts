import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { SqlDatabase } from '../../db/open.ts';
import {
  type AppendedListener,
  type AppendOptions,
  type AppendResult,
  type EventData,
  type EventStore,
  type ExpectedRevision,
  type ReadAllOptions,
  type ReadStreamOptions,
  type RecordedEvent,
  type RevisionStamp,
  STAMP_WIDTH,
  START,
  StoreUnavailableError,
  type StreamAppend,
  StreamNotFoundError,
} from '../port.ts';
import { startNotifyListener } from './listener.ts';
import { comparePositions, parsePosition } from './positions.ts';
import {
  type AnyDb,
  defaultPage,
  isFullPage,
  readAllPage,
  readCommittedPosition,
  readEventRow,
  readHeadPosition,
  readStreamFirstPage,
  readStreamLastPosition,
  readStreamPage,
  readStreamState,
} from './reads.ts';
import { toRecordedEvent } from './rows.ts';
import { subscribeAllSql } from './subscription.ts';
import { createLiveTail } from './tail.ts';
import { createWakeup } from './wakeup.ts';
import { createAppendWriter, type PreparedEvent } from './writer.ts';

/**
 * The event store on PostgreSQL, embedded mode's own or DATABASE_URL's (design.md, "The event
 * store port"). Other processes' appends wake readers through LISTEN/NOTIFY.
 * Run the migrations first (`migrateToLatest(sql.db)`).
 */

export interface SqlEventStoreOptions {
  /** While live, the end of $all is re-read at least this often (late commits). Default 500 ms. */
  readonly pollMs?: number;
  /** While live, the end of $all is read at most once per this interval, however often commits come. Default 10 ms. */
  readonly liveIntervalMs?: number;
  /**
   * PostgreSQL: append batches written at once, each on a connection of the database's pool.
   * Default 1: appends that arrive while a batch is in flight join the next one (see below).
   */
  readonly writers?: number;
  /** PostgreSQL: the LISTEN/NOTIFY channel. Default `hookline_events`. */
  readonly notifyChannel?: string;
  /** Transient failures the store recovers from (a lost connection, a retried query). */
  readonly onError?: (err: unknown, context: string) => void;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const truncateChunk = 1000;
function checkName(what: string, value: unknown): string {
  // PostgreSQL text cannot hold NUL; a bad value must fail its own append, not its batch.
  if (typeof value !== 'string' || value.length === 0 || value.includes('\u0000')) {
    throw new TypeError(`invalid ${what}: ${JSON.stringify(value)}`);
  }
  return value;
}

/** A hello's payload: this prefix and the store's instance id (a commit's payload is the id alone). */
const HELLO_PREFIX = 'hello ';
/** How often a store says hello on its channel (notifyOthers). */
export const PRESENCE_HEARTBEAT_MS = 2_000;
/** How long a store keeps notifying after it last heard another process: three heartbeats. */
const PRESENCE_TTL_MS = 3 * PRESENCE_HEARTBEAT_MS;

/** `parts`: the stream ids of an atomic append, which its events' stamps may name; absent, none may. */
function prepareEvents(events: readonly EventData[], parts?: readonly StreamAppend[]): PreparedEvent[] {
  return events.map((e) => {
    if (!(e.data instanceof Uint8Array)) throw new TypeError('event data must be a Uint8Array');
    if (e.metadata !== undefined && !(e.metadata instanceof Uint8Array)) {
      throw new TypeError('event metadata must be a Uint8Array');
    }
    const contentType = e.contentType ?? 'application/octet-stream';
    if (contentType !== 'application/json' && contentType !== 'application/octet-stream') {
      throw new TypeError(`unsupported content type ${JSON.stringify(contentType)}`);
    }
    const id = e.id ?? randomUUID();
    if (!uuidPattern.test(id)) throw new TypeError(`event id is not a UUID: ${JSON.stringify(id)}`);
    return {
      id,
      type: checkName('event type', e.type),
      data: e.data,
      metadata: e.metadata ?? null,
      contentType,
      stamp: e.stamp === undefined ? null : prepareStamp(e.stamp, e.data, parts),
      uniqueKey: e.uniqueKey === undefined ? null : checkName('unique key', e.uniqueKey),
    };
  });
}

function prepareStamp(
  stamp: RevisionStamp,
  data: Uint8Array,
  parts: readonly StreamAppend[] | undefined,
): PreparedEvent['stamp'] {
  if (!parts) throw new TypeError('only an atomic append may stamp an event');
  const part = parts.findIndex((p) => p.streamId === stamp.streamId);
  if (part < 0 || parts[part]!.events.length === 0) {
    throw new TypeError(`a stamp names ${JSON.stringify(stamp.streamId)}, which the append does not write`);
  }
  const { offset, add } = stamp;
  if (
    !Number.isInteger(add) ||
    !Number.isInteger(offset) ||
    offset < 0 ||
    offset + STAMP_WIDTH > data.byteLength
  ) {
    throw new TypeError('a stamp lies outside its event');
  }
  for (let i = offset; i < offset + STAMP_WIDTH; i++) {
    if (data[i] !== 0x20) throw new TypeError('a stamp must overwrite spaces');
  }
  return { part, add, offset };
}

function checkExpected(expected: ExpectedRevision): ExpectedRevision {
  if (typeof expected === 'bigint') {
    if (expected < 0n) throw new TypeError(`expected revision must not be negative: ${expected}`);
    return expected;
  }
  if (expected === 'any' || expected === 'no_stream' || expected === 'stream_exists') return expected;
  throw new TypeError(`invalid expected revision: ${String(expected)}`);
}

export async function createSqlEventStore(
  sqlDb: SqlDatabase,
  options: SqlEventStoreOptions = {},
): Promise<EventStore> {
  const db = sqlDb.db as AnyDb;
  const onError = options.onError ?? (() => {});
  try {
    await sql`select 1 from es_events limit 0`.execute(db);
  } catch (err) {
    throw new Error('the event store tables are missing: run the migrations first', { cause: err });
  }

  const wakeup = createWakeup();
  const closed = new AbortController();
  const loops = new Set<Promise<void>>();
  const instance = randomUUID();
  const channel = options.notifyChannel ?? 'hookline_events';
  const hello = `${HELLO_PREFIX}${instance}`;
  /**
   * When another process's notification (a commit or a hello) last came: it listens too. Assumed
   * at the start, for one TTL: the others already running are heard at their next heartbeat.
   */
  let othersHeardAt = performance.now();
  const listener = startNotifyListener(
    sqlDb.pool,
    channel,
    (payload) => {
      if (payload === instance || payload === hello) return; // ours: the commit woke us in-process
      othersHeardAt = performance.now();
      if (!payload.startsWith(HELLO_PREFIX)) wakeup.fire();
    },
    () => {
      wakeup.nudge();
      sayHello(); // listening (again): the others learn of this process at once
    },
    (err) => onError(err, 'listen'),
  );
  const heartbeat = setInterval(() => sayHello(), PRESENCE_HEARTBEAT_MS);
  heartbeat.unref();

  // One batch in flight. With two, an agent's claim or completion (a todo's stream) went out at
  // once as a batch of its own beside the batch of deliveries in flight: 1.7 batches and as many
  // NOTIFYs a delivery on the agent path. With one, it waits for that batch and rides the next
  // with the deliveries queued meanwhile: 1.3 of each, and in the quieter pair measured Node's and
  // PostgreSQL's CPU a delivery -21%, with claims no slower (bench/README.md, "The agent path",
  // fourth pass). The deliveries stream had one batch in flight either way (a stream's appends
  // are written in call order).
  const writers = Math.max(1, options.writers ?? 1);
  // The group commit takes its connections from the database's pool. A pool of its own (kept open
  // while idle) was tried for issues 22 and 23: it cut the wait for a connection under bench:agent
  // but doubled PostgreSQL's CPU per delivery under bench:ingest (0.46 to 0.98 ms, half the rate,
  // same run); bench/README.md, "The write path".
  /** Listeners of this store's own commits (port.ts, onAppended). */
  const appended = new Set<AppendedListener>();
  const writer = createAppendWriter({
    db: db as AnyDb,
    maxInFlight: writers,
    // Other processes are told after the commit (notifyOthers), not inside the batch's transaction.
    notifyChannel: undefined,
    notifyPayload: instance,
    onCommitted: (_events, newest) => {
      wakeup.fire(newest);
      if (newest !== undefined) notifyOthers();
    },
    onAppended: (streamId, events) => {
      for (const listener of appended) {
        try {
          listener(streamId, events);
        } catch (err) {
          onError(err, 'appended listener');
        }
      }
    },
    lastPositionOf: (streamId) => readStreamLastPosition(db, streamId),
  });

  const track = (loop: Promise<void>) => {
    loops.add(loop);
    void loop.finally(() => loops.delete(loop));
  };
  /**
   * Wakes other processes' readers after a commit: one NOTIFY at a time on the pool, and one more
   * after it for whatever committed meanwhile. A NOTIFY inside the append's transaction held
   * PostgreSQL's notify lock, which is one for the whole cluster, from the commit until its WAL
   * flush: batches of this store and every notifying transaction of the server waited on each
   * other (bench/README.md, "The write path"). A process that dies between its commit and the
   * NOTIFY leaves the others' readers to their poll (pollMs), as a lost notification always did.
   *
   * Only while another process is known to listen: a NOTIFY is a transaction of its own with a
   * commit record to flush, about one per append batch, for nobody when hookline runs alone (every
   * embedded start, most server ones). Each store says hello on the channel when its listener
   * connects and every PRESENCE_HEARTBEAT_MS; one that has heard another process within
   * PRESENCE_TTL_MS notifies, and so does every store in its first TTL. A process that starts is
   * heard at its hello (before that, and if a hello is lost, its readers still poll), one that
   * stops is forgotten after the TTL.
   */
  let notifying = false;
  let notifyAgain = false;
  function sayHello(): void {
    if (closed.signal.aborted) return;
    // A lost hello costs a heartbeat's wait at most; the listener reports a lost connection.
    track(
      sql`select pg_notify(${channel}, ${hello})`.execute(db).then(
        () => {},
        () => {},
      ),
    );
  }
  function notifyOthers(): void {
    if (closed.signal.aborted) return;
    if (performance.now() - othersHeardAt > PRESENCE_TTL_MS) return;
    if (notifying) {
      notifyAgain = true;
      return;
    }
    notifying = true;
    notifyAgain = false;
    track(
      sql`select pg_notify(${channel}, ${instance})`
        .execute(db)
        .then(
          () => {},
          (err: unknown) => onError(err, 'notify'),
        )
        .finally(() => {
          notifying = false;
          if (notifyAgain) notifyOthers();
        }),
    );
  }

  const tail = createLiveTail({
    db,
    wakeup,
    pollMs: options.pollMs ?? 500,
    minIntervalMs: options.liveIntervalMs ?? 10,
    limits: defaultPage,
    closed: closed.signal,
    track,
    onError: (err) => onError(err, 'live tail'),
  });

  let closing: Promise<void> | undefined;

  async function* readStream(streamId: string, opts: ReadStreamOptions = {}): AsyncGenerator<RecordedEvent> {
    if (
      (opts.direction ?? 'forwards') === 'forwards' &&
      opts.fromRevision === undefined &&
      (opts.maxCount === undefined || opts.maxCount > 0)
    ) {
      yield* readStreamFromStart(streamId, opts.maxCount ?? Number.POSITIVE_INFINITY);
      return;
    }
    const state = await readStreamState(db, streamId);
    if (state.revision < 0n || state.truncateBefore > state.revision) throw new StreamNotFoundError(streamId);
    const direction = opts.direction ?? 'forwards';
    let remaining = opts.maxCount ?? Number.POSITIVE_INFINITY;
    let from = opts.fromRevision ?? (direction === 'forwards' ? 0n : state.revision);
    while (remaining > 0 && from >= 0n) {
      const limits = { maxRows: Math.min(defaultPage.maxRows, remaining), maxBytes: defaultPage.maxBytes };
      const rows = await readStreamPage(db, streamId, from, state.truncateBefore, direction, limits);
      for (const row of rows) {
        const event = toRecordedEvent(row);
        from = direction === 'forwards' ? event.revision + 1n : event.revision - 1n;
        remaining--;
        yield event;
      }
      if (!isFullPage(rows, limits)) return;
    }
  }

  /**
   * A whole stream (an aggregate's load): the first page in one statement with the stream's
   * truncation bound (reads.ts, readStreamFirstPage), the rest as readStream pages them.
   */
  async function* readStreamFromStart(streamId: string, maxCount: number): AsyncGenerator<RecordedEvent> {
    let remaining = maxCount;
    let limits = { maxRows: Math.min(defaultPage.maxRows, remaining), maxBytes: defaultPage.maxBytes };
    let rows = await readStreamFirstPage(db, streamId, limits);
    if (rows.length === 0) throw new StreamNotFoundError(streamId);
    const lowest = BigInt(rows[0]!.revision);
    for (;;) {
      let from = lowest;
      for (const row of rows) {
        const event = toRecordedEvent(row);
        from = event.revision + 1n;
        remaining--;
        yield event;
      }
      if (remaining <= 0 || !isFullPage(rows, limits)) return;
      limits = { maxRows: Math.min(defaultPage.maxRows, remaining), maxBytes: defaultPage.maxBytes };
      rows = await readStreamPage(db, streamId, from, lowest, 'forwards', limits);
    }
  }

  async function* readAll(opts: ReadAllOptions = {}): AsyncGenerator<RecordedEvent> {
    let after = parsePosition(opts.after ?? START);
    let remaining = opts.maxCount ?? Number.POSITIVE_INFINITY;
    while (remaining > 0) {
      const limits = { maxRows: Math.min(defaultPage.maxRows, remaining), maxBytes: defaultPage.maxBytes };
      const rows = await readAllPage(db, after, limits);
      for (const row of rows) {
        after = { transactionId: BigInt(row.tx), globalPosition: BigInt(row.gp) };
        remaining--;
        yield toRecordedEvent(row);
      }
      if (!isFullPage(rows, limits)) return;
    }
  }

  return {
    kind: sqlDb.kind,
    uniqueKeys: true,

    async append(
      streamId: string,
      events: readonly EventData[],
      opts: AppendOptions = {},
    ): Promise<AppendResult> {
      if (closing) throw new StoreUnavailableError('the event store is closed');
      const prepared = prepareEvents(events);
      return writer.append(
        checkName('stream id', streamId),
        prepared,
        checkExpected(opts.expectedRevision ?? 'any'),
      );
    },

    onAppended(listener) {
      appended.add(listener);
      return () => {
        appended.delete(listener);
      };
    },

    async appendAtomic(appends: readonly StreamAppend[]): Promise<AppendResult[]> {
      if (closing) throw new StoreUnavailableError('the event store is closed');
      return writer.appendAtomic(
        appends.map((a) => ({
          streamId: checkName('stream id', a.streamId),
          events: prepareEvents(a.events, appends),
          expected: checkExpected(a.options?.expectedRevision ?? 'any'),
        })),
      );
    },

    readStream,
    readAll,

    async readEvent(streamId, revision) {
      if (typeof streamId !== 'string' || streamId.includes('\u0000') || revision < 0n) return undefined;
      const row = await readEventRow(db, streamId, revision);
      return row ? toRecordedEvent(row) : undefined;
    },

    subscribeAll: (opts) =>
      subscribeAllSql(
        {
          db,
          tail,
          limits: defaultPage,
          closed: closed.signal,
          track,
          onError: (err) => onError(err, 'subscribeAll'),
        },
        opts,
      ),

    headPosition: () => readHeadPosition(db),
    committedPosition: () => readCommittedPosition(db),

    async streamInfo(streamId) {
      const state = await readStreamState(db, streamId);
      return { revision: state.revision, truncateBefore: state.truncateBefore };
    },

    async streamRevisions(streamIds) {
      if (streamIds.length === 0) return [];
      const { rows } = await sql<{ stream_id: string; revision: string }>`
        select stream_id, revision::text as revision
        from es_streams where stream_id = any(${[...streamIds]}::text[])`.execute(db);
      const revisions = new Map(rows.map((r) => [r.stream_id, BigInt(r.revision)]));
      return streamIds.map((id) => revisions.get(id) ?? -1n);
    },

    async truncateStream(streamId, beforeRevision) {
      // Recorded first, so stream reads hide the events at once; then deleted in small
      // transactions, so no long one holds back the xid8 reader (design.md, PostgreSQL hygiene).
      const { rows } = await sql<{ truncate_before: string }>`
        update es_streams
        set truncate_before = greatest(truncate_before, least(${beforeRevision.toString()}::bigint, revision + 1))
        where stream_id = ${streamId}
        returning truncate_before::text as truncate_before`.execute(db);
      const row = rows[0];
      if (!row) return;
      for (;;) {
        const result = await sql`
          delete from es_events
          where stream_id = ${streamId} and revision in (
            select revision from es_events
            where stream_id = ${streamId} and revision < ${row.truncate_before}::bigint
            order by revision limit ${truncateChunk})`.execute(db);
        if ((result.numAffectedRows ?? 0n) < BigInt(truncateChunk)) return;
      }
    },

    comparePositions,

    close() {
      closing ??= (async () => {
        await writer.drain();
        closed.abort();
        clearInterval(heartbeat);
        await listener.stop();
        await Promise.allSettled([...loops]);
        wakeup.complete();
      })();
      return closing;
    },
  };
}
