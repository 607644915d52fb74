import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { openPostgres, type SqlDatabase } from '../../src/db/open.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

const hasPg = await postgresAvailable();

/**
 * es_append_batch reads the keys a batch claims by probing the unique index, on its first call on
 * a connection and on its hundredth alike: PL/pgSQL's kept plan once turned that read into a scan
 * of every stored key on every batch (issue 20, migrations/20261125040101_…). One connection, so
 * every batch runs on the same backend and its kept plans.
 */
describe.runIf(hasPg)('es_append_batch on one long-lived connection', () => {
  let database: TestDatabase;
  let sqlDb: SqlDatabase;
  let store: EventStore;

  beforeAll(async () => {
    database = await createTestDatabase('hookline_plans');
    sqlDb = openPostgres(database.url, { max: 1 });
    await migrateToLatest(sqlDb.db);
    store = await createSqlEventStore(sqlDb, { writers: 1 });
  });

  afterAll(async () => {
    await store?.close();
    await sqlDb?.close();
    await database?.drop();
  });

  async function keyIndexTuplesRead(): Promise<number> {
    // This backend's counters reach the shared statistics at its next transaction's end.
    const { rows: pids } = await sqlDb.pool!.query<{ pid: number }>(
      'select pg_stat_force_next_flush(), pg_backend_pid() as pid',
    );
    await sqlDb.pool!.query('select 1');
    const other = new pg.Client({ connectionString: database.url });
    await other.connect();
    try {
      const { rows } = await other.query<{ n: string }>(
        `select idx_tup_read::text as n from pg_stat_user_indexes where indexrelname = 'es_events_unique_key'`,
      );
      expect(pids[0]?.pid).toBeGreaterThan(0);
      return Number(rows[0]?.n ?? 0);
    } finally {
      await other.end();
    }
  }

  it('reads no stored key again when later batches claim new ones', async () => {
    const batches = 40;
    const perBatch = 8;
    for (let b = 0; b < batches; b++) {
      await Promise.all(
        Array.from({ length: perBatch }, () =>
          store.append('deliveries', [
            {
              type: 'DeliveryReceived',
              data: new TextEncoder().encode('{"ok":true}'),
              uniqueKey: `dedup-test-${randomUUID()}`,
            },
          ]),
        ),
      );
    }
    const stored = batches * perBatch;
    const info = await store.streamInfo('deliveries');
    expect(info.revision).toBe(BigInt(stored - 1));
    // Probes of fresh keys find nothing; a scan of the index would have read every stored key on
    // each batch, about stored * batches / 2 entries in all.
    expect(await keyIndexTuplesRead()).toBeLessThan(stored);
  });
});
