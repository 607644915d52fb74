import type { Kysely } from 'kysely';

/** One row (id 1) holding the current settings; absent until the first change. */
export interface SettingsTable {
  id: number;
  retention_max_age_days: number;
  retention_max_rows: number;
  sse_retry_ms: number;
  updated_at: Date;
  changed_by: string | null;
}

/** The newest prune cycles, for the settings screen. */
export interface RetentionRunsTable {
  event_id: string;
  ran_at: Date;
  max_age_days: number;
  max_rows: number;
  truncated_before_id: string | null;
  removed_events: number;
  removed_rows: number;
  duration_ms: number;
}

export interface SettingsTables {
  settings: SettingsTable;
  retention_runs: RetentionRunsTable;
}

/** Creates the tables and their indexes (a rebuild creates them afresh in its shadow schema). */
export async function createSettingsTables(db: Pick<Kysely<unknown>, 'schema'>): Promise<void> {
  await db.schema
    .createTable('settings')
    .ifNotExists()
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('retention_max_age_days', 'integer', (c) => c.notNull())
    .addColumn('retention_max_rows', 'integer', (c) => c.notNull())
    .addColumn('sse_retry_ms', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addColumn('changed_by', 'text')
    .execute();
  await db.schema
    .createTable('retention_runs')
    .ifNotExists()
    .addColumn('event_id', 'text', (c) => c.primaryKey())
    .addColumn('ran_at', 'timestamptz', (c) => c.notNull())
    .addColumn('max_age_days', 'integer', (c) => c.notNull())
    .addColumn('max_rows', 'integer', (c) => c.notNull())
    .addColumn('truncated_before_id', 'bigint')
    .addColumn('removed_events', 'integer', (c) => c.notNull())
    .addColumn('removed_rows', 'integer', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('retention_runs_ran_at_idx')
    .ifNotExists()
    .on('retention_runs')
    .column('ran_at')
    .execute();
}
