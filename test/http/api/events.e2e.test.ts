import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../auth/server.ts';
import { operator, settled } from './client.ts';

/**
 * GET /api/v1/events/{id} (what `hookline forward` fetches): the delivery's exact bytes and
 * recorded headers to its reader; an endpoint webhook's delivery to its owner only.
 */
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

type Delivery = {
  id: number;
  provider: string;
  content_type: string;
  headers: Record<string, string>;
  payload: string;
  encoding: string;
};

describe('GET /api/v1/events/{id}', () => {
  it('gives the bytes as received to the webhook’s owner, a 404 to anyone else and to an unknown id', async () => {
    const alice = await operator(server.url, 'alice');
    const bob = await operator(server.url, 'bob');
    const vended = await alice.call<{ webhook: { ingest_url: string } }>('POST', '/endpoints', {
      name: 'Forwarded',
    });
    expect(vended.status, vended.text).toBe(201);
    const bytes = Buffer.from('{"a":  1,\n "b":"\u00e9"}', 'utf8');
    const res = await fetch(vended.body.webhook.ingest_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8', 'x-custom': 'kept' },
      body: bytes,
    });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: number };

    const mine = await alice.call<Delivery>('GET', `/events/${id}`);
    expect(mine.status, mine.text).toBe(200);
    expect(mine.body.encoding).toBe('utf-8');
    expect(Buffer.from(mine.body.payload, 'utf8').equals(bytes)).toBe(true);
    expect(mine.body).toMatchObject({ id, content_type: 'application/json; charset=utf-8' });
    expect(mine.body.provider).toMatch(/^webhook:wh_/);
    expect(mine.body.headers['x-custom']).toBe('kept');

    await settled(server);
    const theirs = await bob.call<{ code: string }>('GET', `/events/${id}`);
    expect(theirs.status).toBe(404);
    expect(theirs.body.code).toBe('not_found');
    expect((await alice.call('GET', '/events/999999')).status).toBe(404);
    expect((await alice.call('GET', '/events/not-an-id')).status).toBe(404);
  });

  it('needs an operator bearer', async () => {
    const res = await fetch(`${server.url}/api/v1/events/1`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('Bearer');
  });
});
