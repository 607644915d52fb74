import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support.ts';

describe('GET /providers with Accept: application/json', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server.close();
  });

  it('answers ProviderStatus objects (spec 2.4), never a secret', async () => {
    const res = await fetch(`${server.url}/providers`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as Array<Record<string, unknown>>;
    const codehost = body.find((p) => p.name === 'codehost');
    expect(codehost).toMatchObject({
      kind: 'codehost',
      family: 'webhook',
      trust_mode: 'signed',
      enabled: true,
      secret_status: 'configured',
      path: '/webhooks/codehost',
      channel: null,
    });
    expect(body.find((p) => p.name === 'payments')).toMatchObject({ secret_status: 'missing' });
    expect(JSON.stringify(body)).not.toContain('ui-test-codehost-secret');
  });

  it('still answers HTML to a browser', async () => {
    const res = await fetch(`${server.url}/providers`, {
      headers: { accept: 'text/html,application/xhtml+xml,application/json;q=0.9' },
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  });
});
