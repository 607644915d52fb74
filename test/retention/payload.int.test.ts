import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getLoggedDelivery, listEvents } from '../../projections/log.queries.ts';
import { deliveryDetail, deliveryToReplay } from '../../src/deliveries/read.ts';
import { createRetentionJob } from '../../src/retention/job.ts';
import { changeSettings } from '../../src/settings/change.ts';
import { seedDeliveries } from '../http/ui/seed.ts';
import { startTestServer, type TestServer } from '../http/ui/support.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

/**
 * The log keeps a delivery's summary and its event keeps the bytes (issue 20): retention must
 * take both, and a delivery whose event is gone must never show a row without its payload.
 */
describe.runIf(await postgresAvailable())('retention prunes the log rows and the payloads together', () => {
  let db: TestDatabase;
  let s: TestServer;
  let ids: number[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    s = await startTestServer({ databaseUrl: db.url });
    ids = await seedDeliveries(
      s.runtime,
      Array.from({ length: 12 }, (_, i) => ({ payload: JSON.stringify({ n: i, word: `w${i}` }) })),
    );
    await s.runtime.projections.waitFor(await s.runtime.store.committedPosition(), { timeoutMs: 10_000 });
  });

  afterAll(async () => {
    await s?.close();
    await db?.drop();
  });

  it('reads every retained payload from its event, byte for byte', async () => {
    for (const [i, id] of ids.entries()) {
      const detail = await deliveryDetail(s.runtime, id);
      expect(detail?.payload).toBe(JSON.stringify({ n: i, word: `w${i}` }));
      expect((await deliveryToReplay(s.runtime, id))?.payload).toEqual(detail?.payload_bytes);
    }
    // The payload's words are still searchable, though the row no longer holds its text.
    expect((await listEvents(s.runtime.db, { q: 'w3' })).events.map((e) => e.id)).toEqual([ids[3]]);
  });

  it('a delivery whose event the store has truncated is gone, even while its row waits for the prune', async () => {
    await s.runtime.store.truncateStream('deliveries', BigInt(ids[1]! - 1)); // below delivery ids[1]'s revision
    expect(await getLoggedDelivery(s.runtime.db, ids[0]!)).toBeDefined();
    expect(await deliveryDetail(s.runtime, ids[0]!)).toBeUndefined();
    expect(await deliveryToReplay(s.runtime, ids[0]!)).toBeUndefined();
    expect(await deliveryDetail(s.runtime, ids[1]!)).toBeDefined();
  });

  it('a prune takes the rows and the events below the same point', async () => {
    const changed = await changeSettings(
      { store: s.runtime.store, clock: s.runtime.clock },
      { type: 'ChangeSettings', values: { retention_max_rows: 5 }, actor: null },
    );
    await s.runtime.projections.waitFor(changed.position!, { timeoutMs: 10_000 });
    const ran = await createRetentionJob({
      store: s.runtime.store,
      db: s.runtime.db,
      sql: s.runtime.sql,
      clock: s.runtime.clock,
      logger: s.runtime.logger,
    }).runOnce();
    const keep = ids.at(-5)!;
    expect(ran).toMatchObject({ log_before_id: keep });
    for (const id of ids) {
      const row = await getLoggedDelivery(s.runtime.db, id);
      const event = await s.runtime.store.readEvent('deliveries', BigInt(id - 1));
      expect([id, row !== undefined, event !== undefined]).toEqual([id, id >= keep, id >= keep]);
      expect((await deliveryDetail(s.runtime, id)) !== undefined).toBe(id >= keep);
    }
  });
});
