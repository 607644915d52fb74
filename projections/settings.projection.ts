import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { decodeEvent } from '../src/domain/events.ts';
import { RETENTION_STREAM } from '../src/domain/retention/events.ts';
import { SETTINGS_STREAM } from '../src/domain/settings/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './engine/types.ts';
import { createSettingsTables } from './settings.table.ts';

const RUNS_KEPT = 20;

export const settingsProjection: Projection = {
  name: 'settings',
  version: 1,
  tables: ['settings', 'retention_runs'],
  createTables: createSettingsTables,
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
