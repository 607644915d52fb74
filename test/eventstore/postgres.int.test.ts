import pg from 'pg';
import { describe } from 'vitest';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { openPostgres, type SqlDatabase } from '../../src/db/open.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { createTestDatabase, PG_ADMIN_URL, postgresAvailable } from '../support/services.ts';
import { describeEventStoreConformance } from './conformance.ts';

const hasPg = await postgresAvailable();

describe.runIf(hasPg)('PostgreSQL adapter', () => {
  describeEventStoreConformance({
    name: 'PostgreSQL',
    kind: 'postgres',
    async setup() {
      const database = await createTestDatabase('hookline_es');
      const handles: SqlDatabase[] = [];
      const stores: EventStore[] = [];
      const migrator = openPostgres(database.url, { max: 1 });
      await migrateToLatest(migrator.db);
      await migrator.close();
      return {
        async open() {
          const sql = openPostgres(database.url);
          handles.push(sql);
          const store = await createSqlEventStore(sql, { pollMs: 200 });
          stores.push(store);
          return store;
        },
        async teardown() {
          for (const s of stores) await s.close();
          for (const h of handles) await h.close();
          await database.drop();
        },
        postgres: {
          url: database.url,
          async terminateBackends() {
            const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
            await admin.connect();
            try {
              const { rows } = await admin.query(
                'select pg_terminate_backend(pid) as ok from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
                [database.name],
              );
              return rows.filter((r) => r.ok).length;
            } finally {
              await admin.end();
            }
          },
        },
      };
    },
  });
});
