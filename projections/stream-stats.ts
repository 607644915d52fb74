import { type Kysely, sql } from 'kysely';
import type { Database } from '../src/db/database.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './types.ts';

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

export const streamCategory = (streamId: string): string => {
  const dash = streamId.indexOf('-');
  return dash > 0 ? streamId.slice(0, dash) : streamId;
};

const typed = (db: Kysely<Database>) => db as unknown as Kysely<StreamStatsTables>;

export const streamStatsProjection: Projection = {
  name: 'stream_stats',
  version: 1,
  tables: ['stream_stats'],

  async createTables(db) {
    await typed(db)
      .schema.createTable('stream_stats')
      .ifNotExists()
      .addColumn('category', 'text', (c) => c.primaryKey())
      .addColumn('events', 'bigint', (c) => c.notNull())
      .addColumn('last_position', 'text', (c) => c.notNull())
      .addColumn('last_stream', 'text', (c) => c.notNull())
      .addColumn('last_type', 'text', (c) => c.notNull())
      .addColumn('last_at', 'timestamptz', (c) => c.notNull())
      .execute();
  },

  async apply(db, events: readonly RecordedEvent[]) {
    // One upsert per category per batch: the batch is in `$all` order, so the last event wins.
    const perCategory = new Map<string, { events: number; last: RecordedEvent }>();
    for (const e of events) {
      const key = streamCategory(e.streamId);
      const entry = perCategory.get(key);
      if (entry) {
        entry.events++;
        entry.last = e;
      } else perCategory.set(key, { events: 1, last: e });
    }
    if (perCategory.size === 0) return;
    await typed(db)
      .insertInto('stream_stats')
      .values(
        [...perCategory].map(([category, { events: n, last }]) => ({
          category,
          events: n,
          last_position: last.position,
          last_stream: last.streamId,
          last_type: last.type,
          last_at: last.createdAt,
        })),
      )
      .onConflict((oc) =>
        oc.column('category').doUpdateSet((eb) => ({
          events: sql<string>`${eb.ref('stream_stats.events')} + ${eb.ref('excluded.events')}`,
          last_position: eb.ref('excluded.last_position'),
          last_stream: eb.ref('excluded.last_stream'),
          last_type: eb.ref('excluded.last_type'),
          last_at: eb.ref('excluded.last_at'),
        })),
      )
      .execute();
  },
};
