import { type Kysely, sql } from 'kysely';
import type { Database } from '../src/db/database.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './engine/types.ts';
import { createStreamStatsTables, type StreamStatsTables } from './stream-stats.table.ts';

export const streamCategory = (streamId: string): string => {
  const dash = streamId.indexOf('-');
  return dash > 0 ? streamId.slice(0, dash) : streamId;
};

const typed = (db: Kysely<Database>) => db as unknown as Kysely<StreamStatsTables>;

export const streamStatsProjection: Projection = {
  name: 'stream_stats',
  version: 1,
  tables: ['stream_stats'],
  // Every delivery is one more row or counter: under ingest, fewer and larger batches (engine/types.ts).
  batchGrows: true,

  createTables: createStreamStatsTables,

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
