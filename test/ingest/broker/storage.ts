import { openEmbedded, openPostgres, type SqlDatabase } from '../../../src/db/open.ts';
import { DELIVERIES_STREAM } from '../../../src/domain/delivery/events.ts';
import { createSqlEventStore } from '../../../src/eventstore/sql/store.ts';
import { freshDataDir, removeDataDir } from '../../support/embedded.ts';
import { createTestDatabase } from '../../support/services.ts';
import { deliveriesOf, type StoredDelivery, waitFor } from './support.ts';

/** Where a child `hookline serve` keeps its log: its env, and a way to read it once it stopped. */
export interface Storage {
  readonly name: string;
  readonly env: Record<string, string>;
  open(): Promise<SqlDatabase>;
  cleanup(): Promise<void>;
}

export async function embeddedStorage(): Promise<Storage> {
  const dir = await freshDataDir();
  return {
    name: 'embedded',
    env: { HOOKLINE_DATA_DIR: dir },
    open: () => openEmbedded(dir),
    cleanup: () => removeDataDir(dir),
  };
}

export async function postgresStorage(): Promise<Storage> {
  const db = await createTestDatabase('hookline_broker');
  return {
    name: 'postgres',
    env: { DATABASE_URL: db.url },
    open: async () => openPostgres(db.url),
    cleanup: db.drop,
  };
}

/**
 * The provider's deliveries in the log, read once the service has stopped. `$all` shows only
 * transactions older than the oldest one running on the cluster (design.md, "PostgreSQL
 * hygiene"), and other suites share the cluster: so wait until it shows as many deliveries as the
 * stream holds.
 */
export async function storedDeliveries(storage: Storage, provider: string): Promise<StoredDelivery[]> {
  const sql = await storage.open();
  try {
    const store = await createSqlEventStore(sql);
    try {
      const { revision } = await store.streamInfo(DELIVERIES_STREAM);
      const total = Number(revision + 1n);
      await waitFor(
        `${total} deliveries visible in $all`,
        async () => (await deliveriesOf(store, undefined)).length === total,
        { timeoutMs: 90_000, intervalMs: 500 },
      );
      return await deliveriesOf(store, provider);
    } finally {
      await store.close();
    }
  } finally {
    await sql.close();
  }
}
