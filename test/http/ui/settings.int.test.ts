import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSettings } from '../../../projections/settings.queries.ts';
import { parseData } from '../../../src/eventstore/codec.ts';
import type { RecordedEvent } from '../../../src/eventstore/port.ts';
import { startTestServer, type TestServer } from './support.ts';

let s: TestServer;

/** A form post from our own page unless the test names the headers. */
const post = (
  fields: Record<string, string>,
  headers: Record<string, string> = { 'sec-fetch-site': 'same-origin' },
) =>
  s.app.inject({
    method: 'POST',
    url: '/settings',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(fields).toString(),
  });

async function settingsEvents(): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  try {
    for await (const e of s.runtime.store.readStream('settings')) out.push(e);
  } catch {
    // no stream yet
  }
  return out;
}

beforeAll(async () => {
  s = await startTestServer();
});

afterAll(async () => {
  await s?.close();
});

describe('settings', () => {
  it('shows the defaults of spec 2.6 before any change, without replay_default_target', async () => {
    const html = (await s.app.inject({ url: '/settings' })).body;
    expect(html).toContain('name="retention_max_age_days" type="number" inputmode="numeric" min="0"');
    expect(html).toMatch(/name="retention_max_age_days"[^>]*value="30"/);
    expect(html).toMatch(/name="retention_max_rows"[^>]*value="50000"/);
    expect(html).toMatch(/name="sse_retry_ms"[^>]*value="3000"/);
    expect(html).not.toContain('replay_default_target');
  });

  it('answers 422 naming the field for an invalid value, and records nothing', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ sse_retry_ms: '249' }, 'sse_retry_ms'],
      [{ sse_retry_ms: 'fast' }, 'sse_retry_ms'],
      [{ retention_max_age_days: '-1' }, 'retention_max_age_days'],
      [{ retention_max_rows: '1.5' }, 'retention_max_rows'],
      [{ retention_max_rows: '' }, 'retention_max_rows'],
      [{ retention_max_age_days: '7', sse_retry_ms: '10' }, 'sse_retry_ms'],
    ];
    for (const [fields, field] of cases) {
      const res = await post(fields, { 'hx-request': 'true', 'sec-fetch-site': 'same-origin' });
      expect(res.statusCode, JSON.stringify(fields)).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      const problem = res.json();
      expect(problem).toMatchObject({ status: 422, code: 'invalid_setting', field });
      expect(problem.detail).toContain(field);
    }
    expect(await settingsEvents()).toHaveLength(0);
  });

  it('persists a change as a SettingsChanged event and re-renders the fragment with it', async () => {
    const res = await post(
      { retention_max_age_days: '7', retention_max_rows: '1000', sse_retry_ms: '500' },
      { 'hx-request': 'true', 'sec-fetch-site': 'same-origin' },
    );
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toMatch(/^\s*<div id="settings-panel"/);
    expect(res.body).toMatch(/name="retention_max_age_days"[^>]*value="7"/);
    expect(res.body).toMatch(/name="sse_retry_ms"[^>]*value="500"/);
    expect(res.body).toContain('Saved');
    const events = await settingsEvents();
    expect(events.map((e) => e.type)).toEqual(['SettingsChanged']);
    expect(parseData(events[0]!)).toMatchObject({
      settings: { retention_max_age_days: 7, retention_max_rows: 1000, sse_retry_ms: 500 },
      changed: ['retention_max_age_days', 'retention_max_rows', 'sse_retry_ms'],
    });
    // Read your own write: the read model already has it.
    expect((await getSettings(s.runtime.db)).settings).toEqual({
      retention_max_age_days: 7,
      retention_max_rows: 1000,
      sse_retry_ms: 500,
    });
    const page = (await s.app.inject({ url: '/settings' })).body;
    expect(page).toMatch(/name="retention_max_rows"[^>]*value="1000"/);
  });

  it('changes only the fields posted, and records nothing when nothing changes', async () => {
    const res = await post({ sse_retry_ms: '750' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(/<html/); // a plain form post gets the whole page
    expect((await getSettings(s.runtime.db)).settings).toEqual({
      retention_max_age_days: 7,
      retention_max_rows: 1000,
      sse_retry_ms: 750,
    });
    const before = (await settingsEvents()).length;
    expect((await post({ sse_retry_ms: '750', retention_max_rows: '1000' })).statusCode).toBe(200);
    expect(await settingsEvents()).toHaveLength(before);
  });

  it('lands concurrent changes of different fields (expected revision, decided again on conflict)', async () => {
    const [a, b] = await Promise.all([
      post({ retention_max_rows: '2000' }),
      post({ retention_max_age_days: '3' }),
    ]);
    expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
    const events = await settingsEvents();
    expect(events.map((e) => Number(e.revision))).toEqual(events.map((_, i) => i));
    const last = parseData<{ settings: Record<string, number> }>(events.at(-1)!);
    expect(last.settings).toMatchObject({ retention_max_rows: 2000, retention_max_age_days: 3 });
  });

  it('refuses cross-site posts with 403 and records nothing', async () => {
    const before = (await settingsEvents()).length;
    const refused: Record<string, string>[] = [
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { origin: 'https://evil.example' },
      { origin: 'null' },
      // DNS rebinding: the page's own (non-loopback) host name in both Host and Origin.
      { origin: 'http://rebound.example:8080', host: 'rebound.example:8080' },
      // Neither header, asking for HTML: no browser posts like that.
      {},
    ];
    for (const headers of refused) {
      const res = await post({ sse_retry_ms: '999' }, headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(403);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ code: 'cross_site' });
    }
    expect(await settingsEvents()).toHaveLength(before);
    const own = await post({ sse_retry_ms: '999' }, { origin: s.url, host: new URL(s.url).host });
    expect(own.statusCode).toBe(200);
  });
});
