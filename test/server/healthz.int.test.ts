import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../http/ui/support.ts';

describe('GET /healthz', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it('reports the database, the read models and the version (spec 2.7)', async () => {
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    // No broker is configured: spec 2.7's `disabled`, which leaves the status ok.
    expect(body).toMatchObject({
      status: 'ok',
      db: 'ok',
      database: 'ok',
      projections: 'ok',
      broker: 'disabled',
    });
    expect(body.version).toBe(server.runtime.config.version);
  });

  it('answers a 503 problem document once the database is gone', async () => {
    // The runtime's database (embedded mode: its own on the managed server) is dropped under it,
    // its connections with it.
    const url = server.runtime.sql.url; // postgresql://user:password@/<database>?host=<socket dir>
    const database = decodeURIComponent(/@\/([^?]+)\?/.exec(url)![1]!);
    const admin = new pg.Client({ connectionString: url.replace(/@\/[^?]+\?/, '@/postgres?') });
    await admin.connect();
    await admin.query(`drop database ${admin.escapeIdentifier(database)} with (force)`);
    await admin.end();
    const res = await fetch(`${server.url}/healthz`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const problem = (await res.json()) as { status: number; health: { status: string; db: string } };
    expect(problem.status).toBe(503);
    expect(problem.health).toMatchObject({ status: 'error', db: 'error' });
  });
});
