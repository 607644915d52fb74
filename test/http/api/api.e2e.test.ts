import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../auth/server.ts';
import { operator } from './client.ts';
import { operatorApiSuite } from './operator-api.ts';

const PROXY_ENV = {
  HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1',
  HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User',
};

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ env: PROXY_ENV });
});
afterAll(async () => {
  await server?.close();
});

operatorApiSuite('embedded mode', () => server);

describe('endpoint expiry', () => {
  it('an endpoint past its expires_at refuses pushes with 409', async () => {
    const alice = await operator(server.url, 'alice');
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const v = await alice.call<{ slug: string }>('POST', '/endpoints', {
      name: 'short-lived',
      expires_at: expiresAt,
    });
    expect(v.status, v.text).toBe(201);
    await sleep(Math.max(0, Date.parse(expiresAt) - Date.now()) + 100);
    const res = await alice.call<{ detail: string }>('POST', `/endpoints/${v.body.slug}/todos`, {
      title: 'late',
    });
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/expired/);
  });
});
