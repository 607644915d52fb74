import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { openPostgres, type SqlDatabase } from '../../src/db/open.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { openEmbeddedTarget } from '../support/embedded.ts';
import { createTestDatabase, postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

interface Reads {
  /** Entries read from the unique index of the events' keys. */
  readonly keyIndex: number;
  /** Rows read by sequential scans of es_events. */
  readonly eventsScanned: number;
  /** Entries read from es_streams' primary key. */
  readonly streamIndex: number;
}

/**
 * es_append_batch reads the keys a batch claims, and the streams that might hold them, by probing
 * the unique indexes, on its first call on a connection and on its hundredth alike. PL/pgSQL's kept
 * plan once turned the key read into a scan of every stored key on every batch (issue 20,
 * migrations/20261125040101_…); and the eighth version's `EXISTS` probes were planned as hashed
 * subplans that read all of es_events (PostgreSQL 18, embedded mode) or all of es_streams' index
 * (PostgreSQL 15) on every batch (issue 17, migrations/20261128010100_…). One connection, so every
 * batch runs on the same backend and its kept plans; on the system's server and on embedded mode's.
 */
function describePlans(name: string, open: () => Promise<SqlDatabase & { close(): Promise<void> }>) {
  describe(`es_append_batch on one long-lived connection (${name})`, () => {
    let sqlDb: SqlDatabase;
    let store: EventStore;

    beforeAll(async () => {
      sqlDb = await open();
      store = await createSqlEventStore(sqlDb, { writers: 1 });
    });

    afterAll(async () => {
      await store?.close();
      await sqlDb?.close();
    });

    async function reads(): Promise<Reads> {
      // This backend's counters reach the shared statistics at its next transaction's end.
      const { rows: pids } = await sqlDb.pool.query<{ pid: number }>(
        'select pg_stat_force_next_flush(), pg_backend_pid() as pid',
      );
      await sqlDb.pool.query('select 1');
      const other = new pg.Client({ connectionString: sqlDb.url });
      await other.connect();
      try {
        const { rows } = await other.query<{
          key_index: string;
          events_scanned: string;
          stream_index: string;
        }>(
          `select
            (select idx_tup_read from pg_stat_user_indexes where indexrelname = 'es_events_unique_key')::text as key_index,
            (select seq_tup_read from pg_stat_user_tables where relname = 'es_events')::text as events_scanned,
            (select idx_tup_read from pg_stat_user_indexes where indexrelname = 'es_streams_pkey')::text as stream_index`,
        );
        expect(pids[0]?.pid).toBeGreaterThan(0);
        return {
          keyIndex: Number(rows[0]?.key_index ?? 0),
          eventsScanned: Number(rows[0]?.events_scanned ?? 0),
          streamIndex: Number(rows[0]?.stream_index ?? 0),
        };
      } finally {
        await other.end();
      }
    }

    it('reads no stored key, event or stream again when later batches claim new keys', async () => {
      // Streams besides `deliveries`, so that a read of all of es_streams would show.
      const otherStreams = 100;
      for (let i = 0; i < otherStreams; i++) {
        await store.append(`other-${i}`, [{ type: 'Noted', data: new TextEncoder().encode('{}') }]);
      }
      const before = await reads();
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
      const after = await reads();
      // Probes of fresh keys find nothing; a scan of the index (or of the table) would have read
      // every stored key on each batch, about stored * batches / 2 entries in all.
      expect(after.keyIndex - before.keyIndex).toBeLessThan(stored);
      expect(after.eventsScanned - before.eventsScanned).toBeLessThan(stored);
      // A probe per key finds nothing, and the stream's revision is read and moved once a batch
      // (a few entries a batch); a scan would read the 101 streams' entries on each batch.
      expect(after.streamIndex - before.streamIndex).toBeLessThan(batches * 10);
    });
  });
}

describe.runIf(hasPg)('server mode', () => {
  describePlans('the system PostgreSQL', async () => {
    const database = await createTestDatabase('hookline_plans');
    const sqlDb = openPostgres(database.url, { max: 1 });
    await migrateToLatest(sqlDb.db);
    return {
      ...sqlDb,
      close: async () => {
        await sqlDb.close();
        await database.drop();
      },
    };
  });
});

describe('embedded mode', () => {
  describePlans('its managed PostgreSQL', () => openEmbeddedTarget({ max: 1 }));
});
