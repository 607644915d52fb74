import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { decodeEvent } from '../src/domain/events.ts';
import { RETENTION_STREAM } from '../src/domain/retention/events.ts';
import { SETTINGS_STREAM } from '../src/domain/settings/events.ts';
import { defaultSettings, type Settings } from '../src/domain/settings/state.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './types.ts';

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

const RUNS_KEPT = 20;

export const settingsProjection: Projection = {
  name: 'settings',
  version: 1,
  tables: ['settings', 'retention_runs'],
  async createTables(db) {
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
  },
  handles: (e) =>
    (e.streamId === SETTINGS_STREAM && e.type === 'SettingsChanged') ||
    (e.streamId === RETENTION_STREAM && e.type === 'RetentionRan'),
  async apply(db, events) {
    let runs = false;
    for (const e of events) {
      if (e.streamId === SETTINGS_STREAM) await applySettings(db, e);
      else if (e.streamId === RETENTION_STREAM && e.type === 'RetentionRan') {
        await applyRun(db, e);
        runs = true;
      }
    }
    if (runs) {
      // Keep the newest cycles and, apart from them, the newest cycles that removed something:
      // most cycles remove nothing, and the screen still shows the last real removal.
      const newest = db
        .selectFrom('retention_runs')
        .select('event_id')
        .orderBy('ran_at', 'desc')
        .orderBy('event_id', 'desc')
        .limit(RUNS_KEPT);
      const newestRemovals = db
        .selectFrom('retention_runs')
        .select('event_id')
        .where((eb) => eb.or([eb('removed_events', '>', 0), eb('removed_rows', '>', 0)]))
        .orderBy('ran_at', 'desc')
        .orderBy('event_id', 'desc')
        .limit(RUNS_KEPT);
      await db
        .deleteFrom('retention_runs')
        .where('event_id', 'not in', newest)
        .where('event_id', 'not in', newestRemovals)
        .execute();
    }
  },
};

async function applySettings(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  const event = decodeEvent(e);
  if (event.type !== 'SettingsChanged') return;
  const row = {
    id: 1,
    ...event.data.settings,
    updated_at: new Date(event.data.changed_at),
    changed_by: event.data.changed_by,
  };
  await db
    .insertInto('settings')
    .values(row)
    .onConflict((oc) => oc.column('id').doUpdateSet(row))
    .execute();
}

async function applyRun(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  const event = decodeEvent(e);
  if (event.type !== 'RetentionRan') return;
  const data = event.data;
  await db
    .insertInto('retention_runs')
    .values({
      event_id: e.id,
      ran_at: new Date(data.ran_at),
      max_age_days: data.max_age_days,
      max_rows: data.max_rows,
      truncated_before_id: data.truncated_before_id === null ? null : String(data.truncated_before_id),
      removed_events: data.removed_events,
      removed_rows: data.removed_rows,
      duration_ms: Math.round(data.duration_ms),
    })
    .onConflict((oc) => oc.column('event_id').doNothing())
    .execute();
}

export interface CurrentSettings {
  readonly settings: Settings;
  readonly updatedAt: Date | null;
  readonly changedBy: string | null;
}

/** The settings in force: the read model's row, or the defaults before any change. */
export async function getSettings(db: Kysely<Database>): Promise<CurrentSettings> {
  const row = await db.selectFrom('settings').selectAll().where('id', '=', 1).executeTakeFirst();
  if (!row) return { settings: defaultSettings, updatedAt: null, changedBy: null };
  return {
    settings: {
      retention_max_age_days: row.retention_max_age_days,
      retention_max_rows: row.retention_max_rows,
      sse_retry_ms: row.sse_retry_ms,
    },
    updatedAt: new Date(row.updated_at),
    changedBy: row.changed_by,
  };
}

export interface RetentionRunView {
  readonly ranAt: Date;
  readonly maxAgeDays: number;
  readonly maxRows: number;
  readonly truncatedBeforeId: number | null;
  readonly removedEvents: number;
  readonly removedRows: number;
  readonly durationMs: number;
}

/** The newest cycles; with `removalsOnly`, the newest that removed something. */
export async function listRetentionRuns(
  db: Kysely<Database>,
  options: { limit?: number; removalsOnly?: boolean } = {},
): Promise<RetentionRunView[]> {
  let q = db.selectFrom('retention_runs').selectAll();
  if (options.removalsOnly)
    q = q.where((eb) => eb.or([eb('removed_events', '>', 0), eb('removed_rows', '>', 0)]));
  const rows = await q
    .orderBy('ran_at', 'desc')
    .orderBy('event_id', 'desc')
    .limit(options.limit ?? 5)
    .execute();
  return rows.map((r) => ({
    ranAt: new Date(r.ran_at),
    maxAgeDays: r.max_age_days,
    maxRows: r.max_rows,
    truncatedBeforeId: r.truncated_before_id === null ? null : Number(r.truncated_before_id),
    removedEvents: r.removed_events,
    removedRows: r.removed_rows,
    durationMs: r.duration_ms,
  }));
}
