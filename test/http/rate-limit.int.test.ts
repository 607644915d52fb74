import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { sendCodehost, startTestServer, type TestServer } from './ui/support.ts';

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({
    env: { HOOKLINE_RECEIVER_RATE_LIMIT: '3', HOOKLINE_RECEIVER_RATE_WINDOW_S: '120' },
  });
});

afterAll(async () => {
  await s?.close();
});

async function countEvents(): Promise<number> {
  let n = 0;
  for await (const _ of s.runtime.store.readAll()) n++;
  return n;
}

describe('receivers rate limit (HOOKLINE_RECEIVER_RATE_LIMIT)', () => {
  it('answers 429 too_many_requests with Retry-After past the limit, and appends nothing then', async () => {
    for (let i = 0; i < 3; i++) await sendCodehost(s.url, { n: i });
    const before = await countEvents();
    const res = await fetch(`${s.url}/webhooks/codehost`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-codehost-event': 'push' },
      body: '{"n":4}',
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(120);
    expect(await res.json()).toMatchObject({ status: 429, code: 'too_many_requests' });
    expect(await countEvents()).toBe(before);
    // Other surfaces are not limited.
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
  });
});

describe('its defaults', () => {
  it('is off on a loopback host and 600 a minute beyond it', () => {
    expect(loadConfig({ HOOKLINE_HOST: '127.0.0.1' }).receiverRateLimit).toEqual({ max: 0, windowS: 60 });
    expect(loadConfig({ HOOKLINE_HOST: '::1' }).receiverRateLimit.max).toBe(0);
    expect(loadConfig({ HOOKLINE_HOST: '0.0.0.0' }).receiverRateLimit).toEqual({ max: 600, windowS: 60 });
    expect(
      loadConfig({ HOOKLINE_HOST: '0.0.0.0', HOOKLINE_RECEIVER_RATE_LIMIT: '0' }).receiverRateLimit.max,
    ).toBe(0);
  });
});
