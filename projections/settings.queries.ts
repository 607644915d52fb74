import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { defaultSettings, type Settings } from '../src/domain/settings/state.ts';

/** What the settings screen, the stream and the retention job read. */
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
