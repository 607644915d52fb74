import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listProviders } from '../../projections/providers.queries.ts';
import { deliveryDetail } from '../../src/deliveries/read.ts';
import { codehostHeaders, type Hookline, startHookline } from './harness.ts';

let h: Hookline;
beforeAll(async () => {
  h = await startHookline({ HOOKLINE_TRUSTED_PROXIES: '127.0.0.1' });
});
afterAll(async () => {
  await h?.close();
});

const form = (fields: Record<string, string>, headers: Record<string, string> = {}) => ({
  payload: new URLSearchParams(fields).toString(),
  headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
});

async function createProvider(name: string, trust_mode: 'token' | 'open') {
  const res = await h.app.inject({
    method: 'POST',
    url: '/providers',
    ...form({ name, trust_mode }, { accept: 'application/json' }),
  });
  expect(res.statusCode).toBe(201);
  return res.json() as { name: string; token?: string; enabled: boolean; path: string; trust_mode: string };
}

const setEnabled = (name: string, enabled: boolean, headers: Record<string, string> = {}) =>
  h.app.inject({
    method: 'POST',
    url: `/providers/${encodeURIComponent(name)}/enabled`,
    ...form({ enabled: String(enabled) }, { accept: 'application/json', ...headers }),
  });

const ingest = (url: string, headers: Record<string, string> = {}, payload = '{"type":"build","ok":true}') =>
  h.app.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', ...headers } });

describe('generic receivers (spec 4.2) and the provider routes', () => {
  let token = '';

  it('creates a token provider, disabled, its token shown once and stored only as a hash', async () => {
    const created = await createProvider('ci', 'token');
    expect(created).toMatchObject({
      name: 'generic:ci',
      enabled: false,
      trust_mode: 'token',
      path: '/webhooks/generic/ci',
    });
    token = created.token!;
    expect(Buffer.from(token, 'base64url').length).toBeGreaterThanOrEqual(32);
    const again = await h.app.inject({
      method: 'POST',
      url: '/providers',
      ...form({ name: 'ci', trust_mode: 'token' }, { 'sec-fetch-site': 'same-origin' }),
    });
    expect(again.statusCode).toBe(409);
    const bad = await h.app.inject({
      method: 'POST',
      url: '/providers',
      ...form({ name: 'Bad Name', trust_mode: 'token' }, { 'sec-fetch-site': 'same-origin' }),
    });
    expect(bad.statusCode).toBe(400);
    // Nothing in the log holds the token itself.
    for await (const e of h.runtime.store.readAll()) {
      expect(Buffer.from(e.data).toString('latin1')).not.toContain(token);
    }
  });

  it('answers 403 while disabled, 404 for an unknown name or a bad one', async () => {
    expect((await ingest('/webhooks/generic/ci', { authorization: `Bearer ${token}` })).statusCode).toBe(403);
    expect((await ingest('/webhooks/generic/unknown', { authorization: `Bearer ${token}` })).statusCode).toBe(
      404,
    );
    expect((await ingest('/webhooks/generic/Bad!', {})).statusCode).toBe(404);
  });

  it('accepts the token from Bearer, X-Hookline-Token, ?token= and the path once enabled', async () => {
    const res = await setEnabled('generic:ci', true);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ name: 'generic:ci', enabled: true });
    const ways = [
      ingest('/webhooks/generic/ci', { authorization: `Bearer ${token}` }),
      ingest('/webhooks/generic/ci', { 'x-hookline-token': token }),
      ingest(`/webhooks/generic/ci?token=${token}`),
      ingest(`/webhooks/generic/ci/${token}`),
    ];
    for (const r of await Promise.all(ways)) {
      expect(r.statusCode).toBe(202);
      expect(r.json()).toMatchObject({ provider: 'generic:ci', trust_mode: 'token', verified: false });
    }
    const ack = (await ways[0]!).json();
    await h.settle();
    const detail = await deliveryDetail(h.runtime, ack.id);
    expect(detail).toMatchObject({ verify_detail: 'token ok', event_type: 'build', verified: false });
    expect(detail!.headers.authorization).toBe('«redacted»');
  });

  it('answers 403 for a missing or wrong token', async () => {
    expect((await ingest('/webhooks/generic/ci')).statusCode).toBe(403);
    expect((await ingest('/webhooks/generic/ci', { authorization: `Bearer ${token}x` })).statusCode).toBe(
      403,
    );
    expect((await ingest(`/webhooks/generic/ci/${token.slice(1)}`)).statusCode).toBe(403);
  });

  it('never writes a token into a log line or a stored header', async () => {
    await ingest(`/webhooks/generic/ci/${token}?token=${token}`, {
      'x-forwarded-for': '198.51.100.4',
      'x-note': `t=${token}`,
    });
    await h.settle();
    expect(h.logs.join('\n')).not.toContain(token);
    const rows = await h.runtime.db
      .selectFrom('log_events')
      .selectAll()
      .where('provider', '=', 'generic:ci')
      .execute();
    const details = await Promise.all(rows.map((r) => deliveryDetail(h.runtime, r.id)));
    expect(details.every((d) => d !== undefined)).toBe(true);
    expect(JSON.stringify([rows, details], (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(
      token,
    );
    expect(rows.map((r) => r.source_ip)).toContain('198.51.100.4');
  });

  it('an open provider takes no token and is labelled open', async () => {
    await createProvider('lan', 'open');
    await setEnabled('generic:lan', true);
    const res = await ingest('/webhooks/generic/lan');
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ trust_mode: 'open', verified: false });
    await h.settle();
    expect(await deliveryDetail(h.runtime, res.json().id)).toMatchObject({
      verify_detail: 'open: not checked',
      trust_mode: 'open',
    });
  });

  it('toggles a signed provider: 403 while disabled; 404 for an unknown provider', async () => {
    const body = '{"x":1}';
    expect((await setEnabled('codehost', false)).json()).toMatchObject({ enabled: false });
    const refused = await h.app.inject({
      method: 'POST',
      url: '/webhooks/codehost',
      payload: body,
      headers: await codehostHeaders(body),
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'provider_disabled' });
    await setEnabled('codehost', true);
    const ok = await h.app.inject({
      method: 'POST',
      url: '/webhooks/codehost',
      payload: body,
      headers: await codehostHeaders(body),
    });
    expect(ok.statusCode).toBe(202);
    const unknown = await setEnabled('generic:ghost', true);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  it('renders an HTML fragment unless JSON is asked for, and refuses cross-site posts', async () => {
    const html = await h.app.inject({
      method: 'POST',
      url: `/providers/${encodeURIComponent('generic:ci')}/enabled`,
      ...form({ enabled: 'false' }, { 'sec-fetch-site': 'same-origin' }),
    });
    expect(html.statusCode).toBe(200);
    expect(html.headers['content-type']).toMatch(/^text\/html/);
    expect(html.body).toContain('generic:ci');
    expect(html.body).toContain('hx-post="/providers/generic%3Aci/enabled"');
    const crossSite: Record<string, string>[] = [
      { 'sec-fetch-site': 'cross-site' },
      { origin: 'https://evil.example' },
      { 'sec-fetch-site': 'same-site' },
    ];
    for (const headers of crossSite) {
      const res = await h.app.inject({
        method: 'POST',
        url: '/providers',
        ...form({ name: 'evil', trust_mode: 'open' }, headers),
      });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toMatchObject({ code: 'cross_site' });
    }
    const same = await setEnabled('generic:ci', true, {
      origin: h.config.baseUrl,
      'sec-fetch-site': 'same-origin',
    });
    expect(same.statusCode).toBe(200);
  });

  it('lists providers from the environment and the read model', async () => {
    await h.settle();
    const list = await listProviders(h.config, h.runtime.db);
    const byName = new Map(list.map((p) => [p.name, p]));
    expect(byName.get('codehost')).toMatchObject({
      secret_status: 'configured',
      enabled: true,
      trust_mode: 'signed',
      family: 'webhook',
    });
    expect(byName.get('generic:ci')).toMatchObject({
      kind: 'generic',
      secret_status: 'configured',
      enabled: true,
      path: '/webhooks/generic/ci',
    });
    expect(byName.get('generic:lan')).toMatchObject({ trust_mode: 'open', secret_status: 'none-by-design' });
    expect(byName.get('generic:ci')!.recent_count).toBeGreaterThanOrEqual(5);
    expect(byName.get('generic:ci')!.last_event_at).not.toBeNull();
  });

  it('rebuilds the log and providers read models to the same rows', async () => {
    await h.settle();
    const snapshot = async () => ({
      log: await h.runtime.db.selectFrom('log_events').selectAll().orderBy('id').execute(),
      providers: await h.runtime.db.selectFrom('providers').selectAll().orderBy('name').execute(),
    });
    const before = await snapshot();
    expect(before.log.length).toBeGreaterThan(5);
    await h.runtime.projections.rebuild('log');
    await h.runtime.projections.rebuild('providers');
    expect(await snapshot()).toEqual(before);
  });
});
