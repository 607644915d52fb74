import { sql } from 'kysely';
import type { SqlDatabase } from '../../src/db/open.ts';
import type { EventStore, Position } from '../../src/eventstore/port.ts';
import { parsePosition } from '../../src/eventstore/sql/positions.ts';

/**
 * How far the log runs ahead of a position: the count of events after it (bounded by `cap`, since
 * a count is only needed to say "this far behind") and the time the oldest of them was recorded.
 */
export interface LogBacklog {
  readonly events: number;
  readonly oldest: Date | null;
}

export interface LogCounter {
  backlog(after: Position, cap: number): Promise<LogBacklog>;
}

/**
 * Over the SQL event store (PostgreSQL) a count on `es_events`, which reads the index only,
 * with the store's own visibility rule (transactions below the oldest running one).
 */
export function sqlLogCounter(db: SqlDatabase['db']): LogCounter {
  return {
    backlog: async (after, cap) => {
      const p = parsePosition(after);
      const tx = p.transactionId.toString();
      const gp = p.globalPosition.toString();
      const visible = sql`transaction_id < pg_snapshot_xmin(pg_current_snapshot())`;
      const later = sql`(transaction_id, global_position) > (${tx}::xid8, ${gp}::int8)`;
      const { rows } = await sql<{ n: string; oldest: Date | string | null }>`
        select
          (select count(*) from (select 1 from es_events where ${later} and ${visible} limit ${cap}) s)::text as n,
          (select created_at from es_events where ${later} and ${visible}
             order by transaction_id, global_position limit 1) as oldest`.execute(db);
      const row = rows[0];
      return {
        events: Number(row?.n ?? 0),
        oldest: row?.oldest ? new Date(row.oldest) : null,
      };
    },
  };
}

/**
 * Any store through the port (EventStoreDB): reads events after the position, at most
 * `STORE_COUNT_CAP` whatever the caller's cap, since each one is fetched whole.
 */
export const STORE_COUNT_CAP = 10_000;

export function storeLogCounter(store: EventStore): LogCounter {
  return {
    backlog: async (after, requested) => {
      const cap = Math.min(requested, STORE_COUNT_CAP);
      let events = 0;
      let oldest: Date | null = null;
      for await (const e of store.readAll({ after, maxCount: cap })) {
        if (events === 0) oldest = e.createdAt;
        events++;
      }
      return { events, oldest };
    },
  };
}

export function createLogCounter(store: EventStore, sqlDb: SqlDatabase): LogCounter {
  return store.kind === 'eventstoredb' ? storeLogCounter(store) : sqlLogCounter(sqlDb.db);
}

/** Seconds since the oldest unapplied event was recorded; 0 when caught up. */
export function lagSeconds(backlog: LogBacklog, now: Date): number {
  if (!backlog.oldest || backlog.events === 0) return 0;
  return Math.max(0, (now.getTime() - backlog.oldest.getTime()) / 1000);
}
