import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../auth/server.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import { operator, readStream, settled } from './client.ts';
import { operatorApiSuite } from './operator-api.ts';

const PROXY_ENV = {
  HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1',
  HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User',
};
const hasPg = await postgresAvailable();

describe.runIf(hasPg)('operator API on PostgreSQL', () => {
  let database: TestDatabase;
  let server: TestServer;
  beforeAll(async () => {
    database = await createTestDatabase();
    server = await startServer({ databaseUrl: database.url, env: PROXY_ENV });
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
  });

  operatorApiSuite('PostgreSQL', () => server);

  it('20 identical pushes with one key race: one todo, created=true exactly once, one delivery, one ring', async () => {
    const alice = await operator(server.url, 'alice');
    const v = (await alice.call<{ id: string; slug: string }>('POST', '/endpoints', { name: 'race' })).body;
    const body = { title: 'Exactly once', key: `race-${Date.now()}`, payload: { n: 1 } };
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        alice.call<{ id: string; created: boolean; event_id: number }>(
          'POST',
          `/endpoints/${v.slug}/todos`,
          body,
        ),
      ),
    );
    for (const r of results) expect(r.status, r.text).toBe(201);
    expect(results.filter((r) => r.body.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(new Set(results.map((r) => r.body.event_id)).size).toBe(1);

    await settled(server);
    const rows = await server.runtime.db
      .selectFrom('todos')
      .selectAll()
      .where('endpoint_id', '=', v.id)
      .execute();
    expect(rows).toHaveLength(1);
    expect(await readStream(server.runtime.store, `doorbell-${v.id}`)).toHaveLength(1);
    // One hand-off delivery for the endpoint: the losers recorded nothing.
    const deliveries = await readStream(server.runtime.store, 'deliveries');
    const handOffs = deliveries.filter(
      (e) => (e.metadata as { route?: { endpoint_id?: string } } | null)?.route?.endpoint_id === v.id,
    );
    expect(handOffs).toHaveLength(1);
    expect(Number(handOffs[0]!.revision) + 1).toBe(results[0]!.body.event_id);
  });
});
