import { type Kysely, type RawBuilder, sql } from 'kysely';
import { copyOut, decodeBinaryCopy, timestampFromBinary } from '../../db/copy.ts';
import { type Position, START } from '../port.ts';
import { formatPosition, type SqlPosition } from './positions.ts';
import { type EventRow, eventColumns, fromTextRow, ROW_BYTES, rowBytes, type TextEventRow } from './rows.ts';

/**
 * The read queries, the same SQL in every mode. `$all` shows only transactions below the oldest
 * running transaction that writes events (LIVE_BOUND), in (transaction_id, global_position) order:
 * a transaction that commits late has a smaller xid than those committed before it, and stays
 * invisible until it ends, so a reader that has moved past a position never finds a new event
 * behind it. Not below the oldest running transaction of all (`pg_snapshot_xmin`): that one is
 * the whole cluster's, and a transaction open in any database of a shared server (another
 * application, another test suite) would hide every newer append from every reader, the head
 * included, until it ended.
 */

// biome-ignore lint/suspicious/noExplicitAny: the store's tables are queried with raw SQL only
export type AnyDb = Kysely<any>;

export interface PageLimits {
  readonly maxRows: number;
  /** A page stops once it holds this many bytes of data and metadata (always at least one row). */
  readonly maxBytes: number;
}

export const defaultPage: PageLimits = { maxRows: 1000, maxBytes: 8 * 1024 * 1024 };

/** A page that reached its row or byte bound: more may follow. A shorter one read all there was. */
export function isFullPage(rows: readonly EventRow[], limits: PageLimits): boolean {
  if (rows.length >= limits.maxRows) return true;
  let bytes = 0;
  for (const r of rows) bytes += r.size;
  return bytes >= limits.maxBytes;
}

async function page(
  db: AnyDb,
  where: RawBuilder<unknown>,
  order: RawBuilder<unknown>,
  limits: PageLimits,
): Promise<EventRow[]> {
  const { rows } = await sql<TextEventRow>`
    select tx, gp, stream_id, revision, event_id, event_type, content_type, data_b64, metadata_b64, size, created_at,
      unique_key
    from (
      select ${eventColumns}, ${rowBytes}::int4 as size,
        row_number() over w as n,
        sum(${rowBytes}) over w - ${rowBytes} as bytes_before
      from es_events
      where ${where}
      window w as (order by ${order})
      order by ${order}
      limit ${limits.maxRows}
    ) page
    where bytes_before < ${limits.maxBytes}
    order by n`.execute(db);
  return rows.map(fromTextRow);
}

const integer = (n: number | bigint, what: string): string => {
  if (typeof n === 'bigint' || Number.isSafeInteger(n)) return BigInt(n).toString();
  throw new TypeError(`${what} must be an integer, not ${n}`);
};

/**
 * Events of `$all` strictly after `after`, visible to every reader. The page comes as binary COPY
 * output (src/db/copy.ts): the bytes as they are stored, where a query would send them as text
 * (the server encoding each, the client decoding it: about a third of a catch-up read). COPY
 * takes no parameters, so the position and bounds are written into the statement, as integers.
 */
export async function readAllPage(
  db: AnyDb,
  after: SqlPosition,
  limits: PageLimits = defaultPage,
): Promise<EventRow[]> {
  // Qualified order: the selected `revision`/`tx` aliases are text, and ORDER BY prefers an alias.
  const order = 'es_events.transaction_id, es_events.global_position';
  const out = await copyOut(
    db,
    `copy (
      select tx, gp, stream_id, revision, event_id, event_type, content_type, data, metadata, size, created_at,
        unique_key
      from (
        select transaction_id::text as tx, global_position::text as gp, stream_id,
          revision::text as revision, event_id::text as event_id, event_type, content_type, data, metadata,
          ${ROW_BYTES}::int4 as size, created_at, unique_key,
          row_number() over w as n,
          sum(${ROW_BYTES}) over w - ${ROW_BYTES} as bytes_before
        from es_events
        where (transaction_id, global_position) >
            ('${integer(after.transactionId, 'transaction id')}'::xid8, ${integer(after.globalPosition, 'global position')}::bigint)
          and transaction_id < (${LIVE_BOUND})
        window w as (order by ${order})
        order by ${order}
        limit ${integer(limits.maxRows, 'maxRows')}
      ) page
      where bytes_before < ${integer(limits.maxBytes, 'maxBytes')}
      order by n
    ) to stdout (format binary)`,
  );
  return decodeBinaryCopy(out).map(fromCopiedRow);
}

/**
 * The live bound (issue 22): `$all` may be read below the oldest running transaction that writes
 * events, instead of waiting for the oldest running transaction of the whole cluster
 * (`pg_snapshot_xmin`), which any transaction with an id holds back: a projection's batch, a
 * session in another database. A subquery of the read itself, so it costs no round trip.
 *
 * Writers of events are known by their locks, taken before their first write gives them an id
 * and held until they end: es_append_batch takes its streams' advisory locks (class 'hkls')
 * first, and any other write to es_events or es_streams (an import, retention, a test's raw
 * insert) holds a lock of a writing mode on that table from before the row is written. So an id
 * the statement's snapshot shows running (pg_snapshot_xip) bounds the read unless, when the lock
 * table is read just after, that transaction is still running (it holds its id's lock) and holds
 * no writer's lock: it is running and writes no events, and by the contract below never will. An
 * id that ended between the snapshot and the lock table bounds the read too: its events, if any,
 * are not in this snapshot. With none, the bound is the snapshot's xmax: a writer that takes its
 * lock after the snapshot gets its id after it, at or above xmax. The contract: a transaction
 * writes events only if its first write is to es_events or es_streams, or it took a 'hkls' lock
 * before its first write; every writer in this code base does (store.ts, transfer.ts). The lock
 * table shows 32-bit ids: a running id is matched by its low 32 bits, which no other running id
 * shares. The query is the PL/pgSQL function `es_live_bound()` (migrations/20261129030100), so that
 * each connection plans it once: inline, every `$all` read (a COPY, which takes no parameters and is
 * planned on every call) planned it again, about 200 µs of backend CPU a read.
 */
const LIVE_BOUND = 'es_live_bound()';

function fromCopiedRow(f: readonly (Buffer | null)[]): EventRow {
  const need = (i: number): Buffer => {
    const v = f[i];
    if (!v) throw new Error(`column ${i} of an event row is null`);
    return v;
  };
  const metadata = f[8];
  return {
    tx: need(0).toString('latin1'),
    gp: need(1).toString('latin1'),
    stream_id: need(2).toString('utf8'),
    revision: need(3).toString('latin1'),
    event_id: need(4).toString('latin1'),
    event_type: need(5).toString('utf8'),
    content_type: need(6).toString('utf8'),
    // Copies: a view would keep the whole page's buffer alive as long as any one event lives.
    data: Buffer.from(need(7)),
    metadata: metadata ? Buffer.from(metadata) : null,
    size: need(9).readInt32BE(0),
    created_at: timestampFromBinary(need(10)),
    unique_key: f[11] ? f[11].toString('utf8') : null,
  };
}

/** Events of one stream from `from` (inclusive) in the given direction, never below `lowest` (truncation). */
export function readStreamPage(
  db: AnyDb,
  streamId: string,
  from: bigint,
  lowest: bigint,
  direction: 'forwards' | 'backwards',
  limits: PageLimits = defaultPage,
): Promise<EventRow[]> {
  if (direction === 'forwards') {
    const start = from > lowest ? from : lowest;
    return page(
      db,
      sql`stream_id = ${streamId} and revision >= ${start.toString()}::bigint`,
      sql`es_events.revision`,
      limits,
    );
  }
  return page(
    db,
    sql`stream_id = ${streamId} and revision <= ${from.toString()}::bigint and revision >= ${lowest.toString()}::bigint`,
    sql`es_events.revision desc`,
    limits,
  );
}

/**
 * The first page of a stream read forwards from its start, in one statement: its events from the
 * stream's `truncate_before` on (none for a stream that does not exist or is truncated whole), so a
 * short stream is read in one round trip instead of its state and then its events.
 */
export function readStreamFirstPage(
  db: AnyDb,
  streamId: string,
  limits: PageLimits = defaultPage,
): Promise<EventRow[]> {
  return page(
    db,
    sql`stream_id = ${streamId} and revision >= (select truncate_before from es_streams where stream_id = ${streamId})`,
    sql`es_events.revision`,
    limits,
  );
}

/** One event of a stream, unless truncation hides it (revision below the stream's truncate_before). */
export async function readEventRow(
  db: AnyDb,
  streamId: string,
  revision: bigint,
): Promise<EventRow | undefined> {
  const { rows } = await sql<TextEventRow & { size: number }>`
    select ${eventColumns}, ${rowBytes}::int4 as size
    from es_events
    where stream_id = ${streamId} and revision = ${revision.toString()}::bigint
      and revision >= (select truncate_before from es_streams where stream_id = ${streamId})`.execute(db);
  const row = rows[0];
  return row ? fromTextRow(row) : undefined;
}

/** The newest event below the same bound as the reads: where a reader that must miss nothing starts. */
export async function readHeadPosition(db: AnyDb): Promise<Position> {
  const { rows } = await sql<{ tx: string; gp: string }>`
    select transaction_id::text as tx, global_position::text as gp
    from es_events
    where transaction_id < (${sql.raw(LIVE_BOUND)})
    order by transaction_id desc, global_position desc
    limit 1`.execute(db);
  const row = rows[0];
  return row ? formatPosition(row.tx, row.gp) : START;
}

/**
 * The newest committed event, visible to readers or not yet (port.ts, committedPosition). A read
 * model that has applied it has applied every commit before this call, whichever transaction
 * still hides it; readHeadPosition stops below the oldest open transaction that writes events and can miss them.
 */
export async function readCommittedPosition(db: AnyDb): Promise<Position> {
  const { rows } = await sql<{ tx: string; gp: string }>`
    select transaction_id::text as tx, global_position::text as gp
    from es_events
    order by transaction_id desc, global_position desc
    limit 1`.execute(db);
  const row = rows[0];
  return row ? formatPosition(row.tx, row.gp) : START;
}

export interface StreamState {
  /** -1n: the stream has no events. */
  readonly revision: bigint;
  readonly truncateBefore: bigint;
}

export async function readStreamState(db: AnyDb, streamId: string): Promise<StreamState> {
  const { rows } = await sql<{ revision: string; truncate_before: string }>`
    select revision::text as revision, truncate_before::text as truncate_before
    from es_streams where stream_id = ${streamId}`.execute(db);
  const row = rows[0];
  return row
    ? { revision: BigInt(row.revision), truncateBefore: BigInt(row.truncate_before) }
    : { revision: -1n, truncateBefore: 0n };
}

/** Position of the newest event of a stream, or START (the result of an empty append). */
export async function readStreamLastPosition(db: AnyDb, streamId: string): Promise<Position> {
  const { rows } = await sql<{ tx: string; gp: string }>`
    select transaction_id::text as tx, global_position::text as gp
    from es_events where stream_id = ${streamId}
    order by revision desc limit 1`.execute(db);
  const row = rows[0];
  return row ? formatPosition(row.tx, row.gp) : START;
}
