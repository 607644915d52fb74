import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allProjections } from '../../projections/index.ts';
import { revokeEndpoint } from '../../src/endpoints/revoke.ts';
import { dropStreams, produce, testRedis } from '../ingest/broker/support.ts';
import { post } from '../mcp/rules-support.ts';
import { connectAgent, push, settled, vend } from '../mcp/support.ts';
import { REDIS_URL, redisAvailable, redisPrefix } from '../support/services.ts';
import { postForm, sendCodehost, startTestServer, type TestServer, until } from './ui/support.ts';

const hasRedis = await redisAvailable();
/** The forward-auth proxy of this server: it names the user in X-Forwarded-User. */
const PROXY = '10.9.0.7';

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({
    env: {
      HOOKLINE_SECRET_KEY: randomBytes(32).toString('base64url'),
      HOOKLINE_TRUSTED_PROXIES: '10.9.0.0/16',
      HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User',
    },
  });
}, 60_000);

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

  it('shows todos by endpoint, queue and state, stream clients and each read model’s lag', async () => {
    // Two endpoints with a queue of the same name: counted apart, by slug.
    const endpoint = await vend(s, { queue: 'metrics-q' });
    const other = await vend(s, { queue: 'metrics-q' });
    const gone = await vend(s, { queue: 'metrics-q' });
    await push(s, endpoint, { title: 'one' });
    await push(s, endpoint, { title: 'two' });
    await push(s, other, { title: 'three' });
    await push(s, gone, { title: 'four' });
    // A revoked endpoint's todos can no longer move: no series of its own.
    await revokeEndpoint(
      { store: s.runtime.store, clock: s.runtime.clock },
      { ref: gone.slug, operator: 'alice', human: 'alice' },
    );
    await settled(s);
    const events = new AbortController();
    const stream = await fetch(`${s.url}/events`, { signal: events.signal });
    expect(stream.status).toBe(200);
    try {
      await new Promise((r) => setTimeout(r, 50));
      const text = await scrape();
      const todos = (slug: string) =>
        sample(text, 'hookline_todos', { endpoint: slug, queue: 'metrics-q', state: 'pending' });
      expect(todos(endpoint.slug)).toBe(2);
      expect(todos(other.slug)).toBe(1);
      expect(todos(gone.slug)).toBeUndefined();
      expect(text).not.toContain(`endpoint="${gone.slug}"`);
      expect(sample(text, 'hookline_stream_clients')).toBe(1);
    } finally {
      events.abort();
    }
    // One numeric sample per read model (measured in the background every 5 s; the first at start).
    const lag = await until(async () => {
      const text = await scrape();
      const events = allProjections.map((p) =>
        sample(text, 'hookline_projection_lag_events', { projection: p.name }),
      );
      const seconds = allProjections.map((p) =>
        sample(text, 'hookline_projection_lag_seconds', { projection: p.name }),
      );
      return [...events, ...seconds].every((v) => v !== undefined) ? { events, seconds } : undefined;
    }, 15_000);
    for (const v of [...lag.events, ...lag.seconds]) {
      expect(Number.isFinite(v)).toBe(true);
      expect(v).toBeGreaterThanOrEqual(0);
    }
    expect(lag.events).toHaveLength(allProjections.length);
  });

  it('counts sandbox evaluations and their faults: a webhook whose rule throws', async () => {
    const before = await scrape();
    const faulted = sample(before, 'hookline_rule_evaluations_total', { outcome: 'faulted' }) ?? 0;
    const threw = sample(before, 'hookline_rule_faults_total', { reason: 'threw' }) ?? 0;
    const routed = sample(before, 'hookline_rule_evaluations_total', { outcome: 'routed' }) ?? 0;
    const ep = await vend(s);
    const agent = await connectAgent(ep);
    try {
      await agent.ok('set_webhook_rules', {
        webhook_id: ep.webhookId,
        rules: [
          { id: 'route-ok', source: "(d) => d.payload?.ok ? { route: 'inbox' } : 'continue'" },
          { id: 'boom', source: "() => { throw new Error('boom') }" },
        ],
      });
    } finally {
      await agent.close();
    }
    expect((await post(ep.ingestUrl, { ok: true })).status).toBe(202);
    expect((await post(ep.ingestUrl, { ok: false })).status).toBe(202);
    const after = await scrape();
    expect(sample(after, 'hookline_rule_evaluations_total', { outcome: 'routed' })).toBe(routed + 1);
    expect(sample(after, 'hookline_rule_evaluations_total', { outcome: 'faulted' })).toBe(faulted + 1);
    expect(sample(after, 'hookline_rule_faults_total', { reason: 'threw' })).toBe(threw + 1);
  }, 60_000);

  it('counts replay outcomes: a refused replay counts as refused', async () => {
    const { id } = await sendCodehost(s.url, { replay: 'me' });
    await settled(s); // the page replays what the log read model holds
    const before = await scrape();
    const refused = sample(before, 'hookline_replays_total', { outcome: 'refused' }) ?? 0;
    const delivered = sample(before, 'hookline_replays_total', { outcome: 'delivered' }) ?? 0;
    // The detail page's Replay, to a target the SSRF guard refuses (plain http): nothing is sent.
    const res = await postForm(s.url, `/log/${id}/replay`, { target_url: 'http://example.com/hook' });
    expect(res.status).toBe(200); // the 303 to the detail page, followed
    const after = await scrape();
    expect(sample(after, 'hookline_replays_total', { outcome: 'refused' })).toBe(refused + 1);
    expect(sample(after, 'hookline_replays_total', { outcome: 'delivered' }) ?? 0).toBe(delivered);
  });

  it('is served like the screens: 403 to a peer that is neither loopback nor a trusted proxy', async () => {
    const res = await s.app.inject({ url: '/metrics', remoteAddress: '10.1.2.3' });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: 'forbidden' });
    expect((await s.app.inject({ url: '/metrics', remoteAddress: '127.0.0.1' })).statusCode).toBe(200);
  });

  it('is served through the trusted forward-auth proxy when it names a user, else 403', async () => {
    const named = await s.app.inject({
      url: '/metrics',
      remoteAddress: PROXY,
      headers: { 'x-forwarded-user': 'metrics-reader' },
    });
    expect(named.statusCode).toBe(200);
    expect(named.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(named.body).toMatch(/^# TYPE hookline_deliveries_total counter$/m);
    // The proxy without the user header: it did not authenticate anyone.
    const anonymous = await s.app.inject({ url: '/metrics', remoteAddress: PROXY });
    expect(anonymous.statusCode).toBe(403);
    expect(anonymous.json()).toMatchObject({ code: 'forbidden' });
    // The header from a peer that is not the proxy is refused, not believed.
    const forged = await s.app.inject({
      url: '/metrics',
      remoteAddress: '10.1.2.3',
      headers: { 'x-forwarded-user': 'metrics-reader' },
    });
    expect(forged.statusCode).toBe(403);
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

describe.runIf(hasRedis)('GET /metrics: broker deliveries', () => {
  const channel = `${redisPrefix('hookline-metrics')}orders`;
  const provider = `broker:${channel}`;
  const redis = testRedis(REDIS_URL);
  let b: TestServer;

  beforeAll(async () => {
    b = await startTestServer({
      env: {
        HOOKLINE_SECRET_KEY: randomBytes(32).toString('base64url'),
        HOOKLINE_BROKER_URL: REDIS_URL,
        HOOKLINE_BROKER_CHANNELS: channel,
        HOOKLINE_MAX_BODY_BYTES: '1024',
      },
    });
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await dropStreams(redis, [channel]);
    redis.disconnect();
  });

  it('counts what the broker consumer records (accepted) and leaves pending (too_large), by provider', async () => {
    const big = 'x'.repeat(2048);
    await produce(redis, channel, 3, (i) => ({
      payload: i === 1 ? big : JSON.stringify({ n: i }),
      delivery_id: `metrics-${i}`,
    }));
    const text = await until(async () => {
      const res = await fetch(`${b.url}/metrics`);
      const t = await res.text();
      const accepted = sample(t, 'hookline_deliveries_total', { provider, outcome: 'accepted' });
      const large = sample(t, 'hookline_deliveries_total', { provider, outcome: 'too_large' });
      return accepted === 2 && large === 1 ? t : undefined;
    }, 20_000);
    expect(sample(text, 'hookline_deliveries_total', { provider, outcome: 'failed' })).toBeUndefined();
  });
});
