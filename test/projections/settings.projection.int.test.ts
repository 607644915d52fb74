import { beforeEach, describe, expect, it } from 'vitest';
import { settingsProjection } from '../../projections/settings.projection.ts';
import { getSettings, listRetentionRuns } from '../../projections/settings.queries.ts';
import type { RetentionRanData } from '../../src/domain/retention/events.ts';
import { defaultSettings } from '../../src/domain/settings/state.ts';
import { projectionSpec, recorded, resetStreams } from '../support/projection-spec.ts';
import { postgresAvailable } from '../support/services.ts';

const t = (s: number) => new Date(Date.UTC(2026, 10, 22, 10, 0, s)).toISOString();
const ran = (s: number, removed: number): RetentionRanData => ({
  ran_at: t(s),
  max_age_days: 30,
  max_rows: 10,
  truncated_before_id: removed > 0 ? 5 : null,
  removed_events: removed,
  removed_rows: removed,
  duration_ms: 2,
});

describe.runIf(await postgresAvailable())('settings read model: given events, then rows', () => {
  const spec = projectionSpec(settingsProjection);
  beforeEach(resetStreams);

  it('before any change the defaults are in force', async () => {
    await spec.given().thenRows(async (db) => {
      expect(await getSettings(db)).toEqual({ settings: defaultSettings, updatedAt: null, changedBy: null });
    });
  });

  it('the newest change wins; retention runs are listed newest first, removals apart', async () => {
    await spec
      .given(
        recorded('settings', {
          type: 'SettingsChanged',
          data: {
            settings: { ...defaultSettings, sse_retry_ms: 500 },
            changed: ['sse_retry_ms'],
            changed_at: t(1),
            changed_by: 'ada',
          },
        }),
        recorded('retention', { type: 'RetentionRan', data: ran(2, 4) }),
        recorded('retention', { type: 'RetentionRan', data: ran(3, 0) }),
      )
      .thenRows(async (db) => {
        expect(await getSettings(db)).toEqual({
          settings: { ...defaultSettings, sse_retry_ms: 500 },
          updatedAt: new Date(t(1)),
          changedBy: 'ada',
        });
        expect((await listRetentionRuns(db, { limit: 1 }))[0]?.ranAt).toEqual(new Date(t(3)));
        expect((await listRetentionRuns(db, { limit: 1, removalsOnly: true }))[0]?.removedRows).toBe(4);
      });
  });
});
