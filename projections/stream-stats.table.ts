import type { Kysely } from 'kysely';

/**
 * The spine's own read model: per stream category (the stream name up to its first '-', as
 * EventStoreDB's `$ce-` projections count), how many events `$all` holds and which came last.
 * Small and order-sensitive (a double or lost apply changes a count), so the crash test uses it.
 * The counts are of events applied: after retention truncates `deliveries`, a rebuild counts only
 * what the log still holds.
 */
export interface StreamStatsTable {
  category: string;
  events: string | number | bigint;
  last_position: string;
  last_stream: string;
  last_type: string;
  last_at: Date;
}

export interface StreamStatsTables {
  stream_stats: StreamStatsTable;
}

/** Creates the tables and their indexes (a rebuild creates them afresh in its shadow schema). */
export async function createStreamStatsTables(db: Pick<Kysely<unknown>, 'schema'>): Promise<void> {
  await db.schema
    .createTable('stream_stats')
    .ifNotExists()
    .addColumn('category', 'text', (c) => c.primaryKey())
    .addColumn('events', 'bigint', (c) => c.notNull())
    .addColumn('last_position', 'text', (c) => c.notNull())
    .addColumn('last_stream', 'text', (c) => c.notNull())
    .addColumn('last_type', 'text', (c) => c.notNull())
    .addColumn('last_at', 'timestamptz', (c) => c.notNull())
    .execute();
}
