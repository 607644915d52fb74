import { type Kysely, sql } from 'kysely';

/**
 * The event log of the PostgreSQL and PGlite adapters (design.md, "The event store port").
 *
 * `es_events`: one row per event. `transaction_id` is the writer's xid8, so readers can order by
 * (transaction_id, global_position) and see only transactions below the oldest one still running:
 * an event whose transaction commits late is never skipped. The primary key (stream_id, revision)
 * serves stream reads and makes a duplicate revision impossible whatever a writer does.
 *
 * `es_streams`: each stream's current revision (-1: no events yet) and truncation point. Appends
 * lock the rows of their streams, which serializes writers of one stream across processes.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and never see app types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('es_streams')
    .addColumn('stream_id', 'text', (c) => c.primaryKey())
    .addColumn('revision', 'bigint', (c) => c.notNull())
    .addColumn('truncate_before', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('es_events')
    .addColumn('global_position', 'bigserial', (c) => c.notNull())
    .addColumn('transaction_id', sql`xid8`, (c) => c.notNull().defaultTo(sql`pg_current_xact_id()`))
    .addColumn('stream_id', 'text', (c) => c.notNull())
    .addColumn('revision', 'bigint', (c) => c.notNull())
    .addColumn('event_id', 'uuid', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('data', 'bytea', (c) => c.notNull())
    .addColumn('metadata', 'bytea')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('es_events_pkey', ['stream_id', 'revision'])
    .execute();

  await db.schema
    .createIndex('es_events_all_idx')
    .on('es_events')
    .columns(['transaction_id', 'global_position'])
    .unique()
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: as above
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('es_events').execute();
  await db.schema.dropTable('es_streams').execute();
}
