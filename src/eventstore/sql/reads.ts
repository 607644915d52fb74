import { type Kysely, type RawBuilder, sql } from 'kysely';
import { type Position, START } from '../port.ts';
import { formatPosition, type SqlPosition } from './positions.ts';
import { type EventRow, eventColumns, rowBytes } from './rows.ts';

/**
 * The read queries, the same SQL on PGlite and PostgreSQL. `$all` shows only transactions below
 * the oldest one still running (`pg_snapshot_xmin`), in (transaction_id, global_position) order:
 * a transaction that commits late has a smaller xid than those committed before it, and stays
 * invisible until it ends, so a reader that has moved past a position never finds a new event
 * behind it.
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

async function page(db: AnyDb, where: RawBuilder<unknown>, order: RawBuilder<unknown>, limits: PageLimits) {
  const { rows } = await sql<EventRow>`
    select tx, gp, stream_id, revision, event_id, event_type, content_type, data_b64, metadata_b64, size, created_at
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
  return rows;
}

// Qualified: the selected `revision`/`tx` aliases are text, and an ORDER BY name prefers an alias.
const allOrder = sql`es_events.transaction_id, es_events.global_position`;

/** Events of `$all` strictly after `after`, visible to every reader. */
export function readAllPage(
  db: AnyDb,
  after: SqlPosition,
  limits: PageLimits = defaultPage,
): Promise<EventRow[]> {
  const where = sql`(transaction_id, global_position) > (${after.transactionId.toString()}::xid8, ${after.globalPosition.toString()}::bigint)
    and transaction_id < pg_snapshot_xmin(pg_current_snapshot())`;
  return page(db, where, allOrder, limits);
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
