import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendCodehost, startTestServer, type TestServer } from './support.ts';

let s: TestServer;
const ids: Record<string, number> = {};

beforeAll(async () => {
  s = await startTestServer();
  const sent: [string, unknown, string][] = [
    ['invoice', { customer: 'Ada Lovelace', note: 'invoice overdue' }, 'push'],
    ['deploy', { service: 'billing', status: 'deployed' }, 'deployment'],
    ['ada-deploy', { service: 'payroll', author: 'ada' }, 'deployment'],
    ['other', { nothing: 'to see' }, 'issues'],
  ];
  for (const [name, body, event] of sent) ids[name] = (await sendCodehost(s.url, body, { event })).id;
  const head = await s.runtime.store.committedPosition();
  await s.runtime.projections.waitFor(head, { timeoutMs: 30_000 });
});

afterAll(async () => {
  await s?.close();
});

/** The event ids of the rows GET /log shows (the htmx fragment), newest first. */
async function rows(query: Record<string, string>): Promise<{ ids: number[]; body: string }> {
  const res = await s.app.inject({
    url: `/log?${new URLSearchParams(query)}`,
    headers: { 'hx-request': 'true' },
  });
  expect(res.statusCode, res.body).toBe(200);
  return { ids: [...res.body.matchAll(/<tr[^>]*data-id="(\d+)"/g)].map((m) => Number(m[1])), body: res.body };
}

describe('GET /log?q= (full text over payloads and event types)', () => {
  it('finds words of the payload, case folded, all words required', async () => {
    expect((await rows({ q: 'lovelace' })).ids).toEqual([ids.invoice]);
    expect((await rows({ q: 'ADA' })).ids).toEqual([ids['ada-deploy'], ids.invoice]);
    expect((await rows({ q: 'ada payroll' })).ids).toEqual([ids['ada-deploy']]);
    expect((await rows({ q: 'nowhere-to-be-found' })).ids).toEqual([]);
  });

  it('finds event types, phrases and exclusions', async () => {
    expect((await rows({ q: 'deployment' })).ids).toEqual([ids['ada-deploy'], ids.deploy]);
    expect((await rows({ q: '"invoice overdue"' })).ids).toEqual([ids.invoice]);
    expect((await rows({ q: 'deployment -ada' })).ids).toEqual([ids.deploy]);
  });

  it('combines with the other filters and the cursor', async () => {
    expect((await rows({ q: 'ada', event_type: 'push' })).ids).toEqual([ids.invoice]);
    expect((await rows({ q: 'ada', provider: 'chat' })).ids).toEqual([]);
    const first = await rows({ q: 'ada', limit: '1' });
    expect(first.ids).toEqual([ids['ada-deploy']]);
    const older = /href="\/log\?([^"]*cursor=[^"]*)"/.exec(first.body)?.[1]?.replaceAll('&amp;', '&');
    expect(older, 'the older-page link keeps q').toContain('q=ada');
    expect((await rows(Object.fromEntries(new URLSearchParams(older)))).ids).toEqual([ids.invoice]);
    // The live rows of a searched view match the search too.
    const live = await s.app.inject({ url: `/log/rows?after=0&q=billing` });
    expect([...live.body.matchAll(/data-id="(\d+)"/g)].map((m) => Number(m[1]))).toEqual([ids.deploy]);
  });

  it('refuses an over-long q with a problem naming it', async () => {
    const res = await s.app.inject({ url: `/log?q=${'a'.repeat(201)}` });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'invalid_filter', field: 'q' });
  });
});
