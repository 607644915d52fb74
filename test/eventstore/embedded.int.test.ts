import pg from 'pg';
import { describe } from 'vitest';
import { openEmbedded, type SqlDatabase } from '../../src/db/open.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { embeddedTarget } from '../support/embedded.ts';
import { describeEventStoreConformance } from './conformance.ts';

// Embedded mode: the same adapter on the PostgreSQL that hookline runs itself (managed-postgres.ts),
// each store opened the way the runtime opens it.
describe('embedded mode (managed PostgreSQL)', () => {
  describeEventStoreConformance({
    name: 'embedded PostgreSQL',
    kind: 'postgres',
    async setup() {
      const target = await embeddedTarget();
      const handles: SqlDatabase[] = [];
      const stores: EventStore[] = [];
      const first = await openEmbedded(target.env.HOOKLINE_DATA_DIR, { database: target.database });
      handles.push(first);
      return {
        async open() {
          const sql = await openEmbedded(target.env.HOOKLINE_DATA_DIR, { database: target.database });
          handles.push(sql);
          const store = await createSqlEventStore(sql, { pollMs: 200 });
          stores.push(store);
          return store;
        },
        async teardown() {
          for (const s of stores) await s.close();
          for (const h of handles) await h.close();
          await target.drop();
        },
        postgres: {
          url: first.url,
          async terminateBackends() {
            const admin = new pg.Client({
              connectionString: first.url.replace(`/${target.database}?`, '/postgres?'),
            });
            await admin.connect();
            try {
              const { rows } = await admin.query(
                'select pg_terminate_backend(pid) as ok from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
                [target.database],
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
