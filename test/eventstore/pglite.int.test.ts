import { migrateToLatest } from '../../src/db/migrate.ts';
import { openPglite } from '../../src/db/open.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { describeEventStoreConformance } from './conformance.ts';

describeEventStoreConformance({
  name: 'PGlite (in memory)',
  kind: 'pglite',
  async setup() {
    const sql = await openPglite(undefined);
    await migrateToLatest(sql.db);
    const stores: EventStore[] = [];
    return {
      async open() {
        const store = await createSqlEventStore(sql);
        stores.push(store);
        return store;
      },
      async teardown() {
        for (const s of stores) await s.close();
        await sql.close();
      },
    };
  },
});
