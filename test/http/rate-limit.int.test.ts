import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { setFriendRequests } from '../../src/friends/edges.ts';
import { vend } from '../mcp/support.ts';
import { settled } from './api/client.ts';
import { sendCodehost, startTestServer, type TestServer } from './ui/support.ts';

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({
    env: {
      HOOKLINE_RECEIVER_RATE_LIMIT: '3',
      HOOKLINE_RECEIVER_RATE_WINDOW_S: '120',
      HOOKLINE_A2A_RATE_LIMIT: '4',
      HOOKLINE_A2A_RATE_WINDOW_S: '90',
      HOOKLINE_SECRET_KEY: randomBytes(32).toString('base64url'),
    },
  });
});

afterAll(async () => {
  await s?.close();
});

async function countEvents(): Promise<number> {
  // $all shows a commit once every older writer has finished: count once it shows them all.
  await settled(s);
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

describe('A2A rate limit (HOOKLINE_A2A_RATE_LIMIT)', () => {
  it('answers 429 too_many_requests with Retry-After past its own limit, counted apart from the receivers', async () => {
    const ep = await vend(s);
    await setFriendRequests(
      { store: s.runtime.store, clock: s.runtime.clock },
      { operator: 'alice', human: 'alice', ref: ep.slug, accept: true },
    );
    const card = `${s.url}/a2a/${ep.slug}/.well-known/agent-card.json`;
    // The receivers' allowance of this address is spent (above) or not: the A2A one is its own.
    for (let i = 0; i < 4; i++) expect((await fetch(card)).status).toBe(200);
    const limited = await fetch(card);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(90);
    expect(await limited.json()).toMatchObject({ status: 429, code: 'too_many_requests' });
    // JSON-RPC is refused the same way, before its body is read.
    const rpc = await fetch(`${s.url}/a2a/${ep.slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }),
    });
    expect(rpc.status).toBe(429);
    expect(rpc.headers.get('retry-after')).not.toBeNull();
  });
});

describe('its defaults', () => {
  it('the A2A limit is off on a loopback host and 60 a minute beyond it', () => {
    expect(loadConfig({ HOOKLINE_HOST: '127.0.0.1' }).a2aRateLimit).toEqual({ max: 0, windowS: 60 });
    expect(loadConfig({ HOOKLINE_HOST: 'localhost' }).a2aRateLimit.max).toBe(0);
    expect(loadConfig({ HOOKLINE_HOST: '0.0.0.0' }).a2aRateLimit).toEqual({ max: 60, windowS: 60 });
    expect(loadConfig({ HOOKLINE_HOST: '0.0.0.0', HOOKLINE_A2A_RATE_LIMIT: '0' }).a2aRateLimit.max).toBe(0);
  });

  it('is off on a loopback host and 600 a minute beyond it', () => {
    expect(loadConfig({ HOOKLINE_HOST: '127.0.0.1' }).receiverRateLimit).toEqual({ max: 0, windowS: 60 });
    expect(loadConfig({ HOOKLINE_HOST: '::1' }).receiverRateLimit.max).toBe(0);
    expect(loadConfig({ HOOKLINE_HOST: '0.0.0.0' }).receiverRateLimit).toEqual({ max: 600, windowS: 60 });
    expect(
      loadConfig({ HOOKLINE_HOST: '0.0.0.0', HOOKLINE_RECEIVER_RATE_LIMIT: '0' }).receiverRateLimit.max,
    ).toBe(0);
  });
});
