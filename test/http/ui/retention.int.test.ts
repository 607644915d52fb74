import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listRetentionRuns } from '../../../projections/settings.queries.ts';
import type { RecordedEvent } from '../../../src/eventstore/port.ts';
import { createRetentionJob } from '../../../src/retention/job.ts';
import { changeSettings } from '../../../src/settings/change.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import { seedDeliveries } from './seed.ts';
import { startTestServer, type TestServer } from './support.ts';

const hasPg = await postgresAvailable();
const DAY = 86_400_000;

async function collect(it: AsyncIterable<RecordedEvent>): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for await (const e of it) out.push(e);
  return out;
}

function retentionSuite(name: string, usePg: boolean) {
  describe.runIf(!usePg || hasPg)(name, () => {
    let db: TestDatabase | undefined;
    let s: TestServer;
    const logIds = async () =>
      (await s.runtime.db.selectFrom('log_events').select('id').orderBy('id').execute()).map((r) =>
        Number(r.id),
      );
    const job = () =>
      createRetentionJob({
        store: s.runtime.store,
        db: s.runtime.db,
        sql: s.runtime.sql,
        clock: s.runtime.clock,
        logger: s.runtime.logger,
      });
    const setSettings = async (values: Record<string, number>) => {
      const r = await changeSettings(
        { store: s.runtime.store, clock: s.runtime.clock },
        { type: 'ChangeSettings', values, actor: null },
      );
      if (r.position) await s.runtime.projections.waitFor(r.position, { timeoutMs: 10_000 });
    };

    beforeAll(async () => {
      db = usePg ? await createTestDatabase() : undefined;
      s = await startTestServer(db ? { databaseUrl: db.url } : {});
      const now = Date.now();
      await seedDeliveries(
        s.runtime,
        Array.from({ length: 10 }, (_, i) => ({
          received_at: new Date(i < 4 ? now - (40 - i) * DAY : now - (10 - i) * 60_000),
        })),
      );
    });

    afterAll(async () => {
      await s?.close();
      await db?.drop();
    });

    it('prunes deliveries older than retention_max_age_days from the stream and the log', async () => {
      const ran = await job().runOnce();
      expect(ran).toMatchObject({
        max_age_days: 30,
        max_rows: 50_000,
        removed_events: 4,
        removed_rows: 4,
        truncated_before_id: 5,
      });
      expect(await logIds()).toEqual([5, 6, 7, 8, 9, 10]);
      const kept = await collect(s.runtime.store.readStream('deliveries'));
      expect(kept.map((e) => Number(e.revision) + 1)).toEqual([5, 6, 7, 8, 9, 10]);
      expect((await s.runtime.store.streamInfo('deliveries')).truncateBefore).toBe(4n);
    });

    it('keeps at most retention_max_rows, in small batches', async () => {
      await setSettings({ retention_max_rows: 3 });
      const ran = await createRetentionJob(
        {
          store: s.runtime.store,
          db: s.runtime.db,
          sql: s.runtime.sql,
          clock: s.runtime.clock,
          logger: s.runtime.logger,
        },
        { batchSize: 2 },
      ).runOnce();
      expect(ran).toMatchObject({ max_rows: 3, removed_events: 3, removed_rows: 3, truncated_before_id: 8 });
      expect(await logIds()).toEqual([8, 9, 10]);
    });

    it('removes nothing when both limits are 0 (unlimited)', async () => {
      await setSettings({ retention_max_rows: 0, retention_max_age_days: 0 });
      await seedDeliveries(s.runtime, [{ received_at: new Date(Date.now() - 400 * DAY) }]);
      const ran = await job().runOnce();
      expect(ran).toMatchObject({ removed_events: 0, removed_rows: 0, truncated_before_id: null });
      expect(await logIds()).toEqual([8, 9, 10, 11]);
    });

    it('records each cycle for the settings screen', async () => {
      const head = await s.runtime.store.committedPosition();
      await s.runtime.projections.waitFor(head, { timeoutMs: 10_000 });
      const runs = await listRetentionRuns(s.runtime.db, { limit: 10 });
      expect(runs.map((r) => r.removedEvents)).toEqual([0, 3, 4]);
      const [lastRemoval] = await listRetentionRuns(s.runtime.db, { limit: 1, removalsOnly: true });
      expect(lastRemoval).toMatchObject({
        removedEvents: 3,
        removedRows: 3,
        truncatedBeforeId: 8,
        maxRows: 3,
      });
      const html = (await s.app.inject({ url: '/settings' })).body;
      expect(html).toMatch(
        /Last run<\/dt><dd><time[^>]*>[^<]*<\/time> <span class="muted">— removed 0 events, 0 log rows/,
      );
      expect(html).toMatch(
        /Last removal<\/dt><dd><time[^>]*>[^<]*<\/time> <span class="muted">— 3 events, 3 log rows, ids below #8/,
      );
    });
  });
}

retentionSuite('retention in embedded mode', false);
retentionSuite('retention on PostgreSQL', true);
