import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { push, settled, vend } from '../mcp/support.ts';
import { sendCodehost, startTestServer, type TestServer } from './ui/support.ts';

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ env: { HOOKLINE_SECRET_KEY: randomBytes(32).toString('base64url') } });
});

afterAll(async () => {
  await s?.close();
});

/** The value of one sample of the Prometheus text, or undefined when it is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-z_:]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? '').split(',').filter(Boolean);
    if (wanted.every((w) => have.includes(w))) return Number(m[3]);
  }
  return undefined;
}

const scrape = async (): Promise<string> => {
  const res = await fetch(`${s.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
};

describe('GET /metrics (Prometheus text, prom-client)', () => {
  it('counts receiver requests by provider and outcome and times the accepted ones', async () => {
    const before = await scrape();
    const accepted =
      sample(before, 'hookline_deliveries_total', { provider: 'codehost', outcome: 'accepted' }) ?? 0;
    const timed = sample(before, 'hookline_ingest_duration_seconds_count', { provider: 'codehost' }) ?? 0;
    const queued = sample(before, 'hookline_append_queue_seconds_count') ?? 0;
    const commits = sample(before, 'hookline_append_commit_seconds_count') ?? 0;
    await sendCodehost(s.url, { n: 1 });
    await sendCodehost(s.url, { n: 2 });
    const forged = await fetch(`${s.url}/webhooks/codehost`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
      body: '{}',
    });
    expect(forged.status).toBe(401);
    const after = await scrape();
    expect(sample(after, 'hookline_deliveries_total', { provider: 'codehost', outcome: 'accepted' })).toBe(
      accepted + 2,
    );
    expect(sample(after, 'hookline_deliveries_total', { provider: 'codehost', outcome: 'rejected' })).toBe(1);
    expect(sample(after, 'hookline_ingest_duration_seconds_count', { provider: 'codehost' })).toBe(timed + 2);
    // Each accepted delivery was committed by some group commit of the SQL event store.
    expect(sample(after, 'hookline_append_batch_size_sum')).toBeGreaterThanOrEqual(2);
    // Each waited in the group commit's queue, and at least one batch took a connection and committed.
    expect(sample(after, 'hookline_append_queue_seconds_count')).toBeGreaterThanOrEqual(queued + 2);
    expect(sample(after, 'hookline_append_commit_seconds_count')).toBeGreaterThan(commits);
    expect(sample(after, 'hookline_append_connect_seconds_count')).toBe(
      sample(after, 'hookline_append_commit_seconds_count'),
    );
  });

  it('shows todos by queue and state, stream clients and projection lag', async () => {
    const endpoint = await vend(s, { queue: 'metrics-q' });
    await push(s, endpoint, { title: 'one' });
    await push(s, endpoint, { title: 'two' });
    await settled(s);
    const events = new AbortController();
    const stream = await fetch(`${s.url}/events`, { signal: events.signal });
    expect(stream.status).toBe(200);
    try {
      await new Promise((r) => setTimeout(r, 50));
      const text = await scrape();
      expect(sample(text, 'hookline_todos', { queue: 'metrics-q', state: 'pending' })).toBe(2);
      expect(sample(text, 'hookline_stream_clients')).toBe(1);
      expect(text).toMatch(/^# TYPE hookline_projection_lag_events gauge$/m);
      expect(text).toMatch(/^# TYPE hookline_replays_total counter$/m);
      expect(text).toMatch(/^# TYPE hookline_rule_evaluations_total counter$/m);
    } finally {
      events.abort();
    }
  });

  it('is served like the screens: 403 to a peer that is neither loopback nor a trusted proxy', async () => {
    const res = await s.app.inject({ url: '/metrics', remoteAddress: '10.1.2.3' });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'forbidden' });
    expect((await s.app.inject({ url: '/metrics', remoteAddress: '127.0.0.1' })).statusCode).toBe(200);
  });

  it('serves exactly the metrics the table of docs/reference/health.md lists', async () => {
    const served = new Set(
      [...(await scrape()).matchAll(/^# TYPE (hookline_[a-z_]+) /gm)].map((m) => m[1] ?? ''),
    );
    const doc = readFileSync(new URL('../../docs/reference/health.md', import.meta.url), 'utf8');
    const table = doc.slice(doc.indexOf('| metric | type |')).split('\n\n')[0] ?? '';
    const listed = new Set(
      table
        .split('\n')
        .flatMap((row) =>
          [...(row.split('|')[1] ?? '').matchAll(/`(hookline_[a-z_]+)`/g)].map((m) => m[1] ?? ''),
        ),
    );
    expect([...served].sort()).toEqual([...listed].sort());
  });
});
