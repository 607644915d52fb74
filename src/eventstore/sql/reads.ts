import { type Kysely, type RawBuilder, sql } from 'kysely';
import { copyOut, decodeBinaryCopy, timestampFromBinary } from '../../db/copy.ts';
import { type Position, START } from '../port.ts';
import { formatPosition, type SqlPosition } from './positions.ts';
import { type EventRow, eventColumns, fromTextRow, ROW_BYTES, rowBytes, type TextEventRow } from './rows.ts';

/**
 * The read queries, the same SQL in every mode. `$all` shows only transactions below
 * the oldest one still running (`pg_snapshot_xmin`), in (transaction_id, global_position) order:
 * a transaction that commits late has a smaller xid than those committed before it, and stays
 * invisible until it ends, so a reader that has moved past a position never finds a new event
 * behind it. The live tail reads further, below the oldest running transaction that writes events
 * (readLiveBound), which is safe by the same argument.
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
  /** A bound from readLiveBound (or 0n): transactions below it are visible even above the oldest running one. */
  visibleBelow = 0n,
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
          and transaction_id < greatest(pg_snapshot_xmin(pg_current_snapshot()), '${integer(visibleBelow, 'bound')}'::xid8)
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

/** es_append_batch's stream locks: `pg_advisory_xact_lock(class, hash of the stream id)`. */
const STREAM_LOCK_CLASS = 0x686b6c73; // 'hkls'

/**
 * A bound below which `$all` may be read now without waiting for the oldest running transaction
 * of the whole cluster (issue 22). `pg_snapshot_xmin` is held back by any transaction with an id:
 * a projection's batch, a test suite in another database. Only a transaction that writes events
 * can make one appear behind a position already read, and every such writer is known from the
 * locks it holds from before its first write gives it an id until it ends: es_append_batch takes
 * its streams' advisory locks (class 'hkls') first, and any write to es_events or es_streams (an
 * import, retention, a test's raw insert) holds a lock of a writing mode on that table from before
 * the row is written. So the bound is the smallest id of a transaction holding such a lock (or
 * waiting for one), and else the snapshot's xmax (no id at or above it had started).
 *
 * Why it is safe: this statement's snapshot is taken before it reads the lock table. A writer
 * whose id is below the bound was either finished when the snapshot was taken, or finished by the
 * time the locks were read (else it would hold its lock there); a reader that uses the bound in a
 * later statement, with a later snapshot, sees all its events. A writer that takes its lock after
 * the snapshot gets its id after that, at or above the snapshot's xmax. The contract this needs:
 * a transaction writes events only if its first write is to es_events or es_streams, or it took a
 * 'hkls' lock before its first write; every writer in this code base does (store.ts, transfer.ts,
 * retention). pg_locks shows 32-bit ids; each is widened to the xid8 nearest the snapshot's xmax.
 */
export async function readLiveBound(db: AnyDb): Promise<bigint> {
  const { rows } = await sql<{ bound: string }>`
    with snap as (select pg_snapshot_xmax(pg_current_snapshot())::text::bigint as xmax),
    locks as materialized (
      select locktype, database, relation, classid, objsubid, virtualtransaction, transactionid, mode, granted
      from pg_locks
    ),
    writers as (
      select distinct w.virtualtransaction from locks w
      where w.database = (select oid from pg_database where datname = current_database())
        and ((w.locktype = 'advisory' and w.classid = ${sql.lit(STREAM_LOCK_CLASS)}::oid and w.objsubid = 2)
          or (w.locktype = 'relation' and w.relation in ('es_events'::regclass, 'es_streams'::regclass)
            and w.mode not in ('AccessShareLock', 'RowShareLock')))
    ),
    ids as (
      select t.transactionid::text::bigint as x
      from locks t join writers using (virtualtransaction)
      where t.locktype = 'transactionid' and t.granted and t.mode = 'ExclusiveLock'
    )
    select least(snap.xmax,
        min(snap.xmax + (ids.x - snap.xmax % 4294967296 + 6442450944) % 4294967296 - 2147483648))::text as bound
    from snap left join ids on true
    group by snap.xmax`.execute(db);
  return BigInt(rows[0]!.bound);
}

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

export async function readHeadPosition(db: AnyDb): Promise<Position> {
  const { rows } = await sql<{ tx: string; gp: string }>`
    select transaction_id::text as tx, global_position::text as gp
    from es_events
    where transaction_id < pg_snapshot_xmin(pg_current_snapshot())
    order by transaction_id desc, global_position desc
    limit 1`.execute(db);
  const row = rows[0];
  return row ? formatPosition(row.tx, row.gp) : START;
}

/**
 * The newest committed event, visible to readers or not yet (port.ts, committedPosition). A read
 * model that has applied it has applied every commit before this call, whichever transaction
 * still hides it; readHeadPosition stops below the oldest open transaction and can miss them.
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
