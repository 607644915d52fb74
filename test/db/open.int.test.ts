import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/open.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

const hasPg = await postgresAvailable();

describe.runIf(hasPg)('the PostgreSQL pool', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('hookline_open');
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('survives a checked-out connection whose backend is terminated, and serves the next query', async () => {
    // node-pg emits 'error' on a checked-out client whose backend goes away; the pool listens only
    // on idle ones. Without a listener of its own that 'error' is an uncaught exception: the
    // process (here, the test run) dies. Seen in CI under the store's conformance test, on a
    // connection the pool had opened before the event store was built.
    const handle = openPostgres(database.url, { max: 2 });
    try {
      const client = await handle.pool.connect();
      const pid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
      const killer = await handle.pool.connect();
      await killer.query('select pg_terminate_backend($1)', [pid]);
      killer.release();
      await ended;
      await expect(client.query('select 1')).rejects.toThrow();
      client.release(true);
      const { rows } = await handle.pool.query<{ one: number }>('select 1 as one');
      expect(rows).toEqual([{ one: 1 }]);
    } finally {
      await handle.close();
    }
  });
});
