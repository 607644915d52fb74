import { beforeEach, describe, expect, it } from 'vitest';
import { streamStatsProjection } from '../../projections/stream-stats.projection.ts';
import { delivery, projectionSpec, recorded, resetStreams } from '../support/projection-spec.ts';
import { postgresAvailable } from '../support/services.ts';

const t = (s: number) => new Date(Date.UTC(2026, 10, 22, 10, 0, s)).toISOString();

describe.runIf(await postgresAvailable())('stream_stats read model: given events, then rows', () => {
  const spec = projectionSpec(streamStatsProjection);
  beforeEach(resetStreams);

  it('counts every event per stream category and keeps the last', async () => {
    const last = recorded('settings', {
      type: 'SettingsChanged',
      data: {
        settings: { retention_max_age_days: 1, retention_max_rows: 1, sse_retry_ms: 300 },
        changed: ['sse_retry_ms'],
        changed_at: t(2),
        changed_by: null,
      },
    });
    await spec
      .given(
        delivery({ provider: 'codehost', received_at: t(0) }),
        delivery({ provider: 'chat', received_at: t(1) }),
        last,
      )
      .thenRows(async (db) => {
        const rows = await db
          .withTables<{ stream_stats: { category: string; events: string; last_stream: string } }>()
          .selectFrom('stream_stats')
          .select(['category', 'events', 'last_stream'])
          .orderBy('category')
          .execute();
        expect(rows.map((r) => [r.category, Number(r.events), r.last_stream])).toEqual([
          ['deliveries', 2, 'deliveries'],
          ['settings', 1, 'settings'],
        ]);
      });
  });
});
