import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendCodehost, startTestServer, type TestServer } from './support.ts';

/** GET /log/rows: the live rows of a log view, rendered by the server with the page's filters. */
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const rows = async (query: string) => {
  const res = await s.app.inject({ url: `/log/rows?${query}` });
  const ids = [...res.body.matchAll(/<tr class="log-row is-new" data-id="(\d+)"/g)].map((m) => Number(m[1]));
  return { res, ids };
};

describe('GET /log/rows', () => {
  it('renders the deliveries newer than the newest shown, matching the filters, newest first', async () => {
    const a = await sendCodehost(s.url, { n: 1 }, { event: 'push' });
    const b = await sendCodehost(s.url, { n: 2 }, { event: 'issues' });
    const c = await sendCodehost(s.url, { n: 3 }, { event: 'push', headers: {} });
    // The position of the newest event-received: the rows wait for the log read model to have it.
    const position = encodeURIComponent(await s.runtime.store.committedPosition());
    const all = await rows(`after=${a.id}&limit=50&position=${position}`);
    expect(all.res.statusCode).toBe(200);
    expect(all.res.headers['content-type']).toMatch(/^text\/html/);
    expect(all.res.headers['content-security-policy']).toContain("script-src 'self'");
    expect(all.ids).toEqual([c.id, b.id]);
    expect(all.res.headers['x-hookline-more']).toBe('false');
    expect((await rows(`after=${a.id}&event_type=push`)).ids).toEqual([c.id]);
    expect((await rows(`after=0&event_type=issues`)).ids).toEqual([b.id]);
    expect((await rows(`after=${c.id}`)).ids).toEqual([]);
    const capped = await rows('after=0&limit=1');
    expect(capped.ids).toEqual([c.id]);
    expect(capped.res.headers['x-hookline-more']).toBe('true');
  });

  it('escapes what the delivery said and refuses a malformed view', async () => {
    const hostile = await sendCodehost(s.url, { n: 4 }, { event: '<img src=x onerror=alert(1)>' });
    // A position that is not one is ignored (no wait): let the read model have the delivery first.
    await s.runtime.projections.waitFor(await s.runtime.store.committedPosition(), { timeoutMs: 20_000 });
    const { res } = await rows(`after=${hostile.id - 1}&position=not-a-position`);
    expect(res.body).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(res.body).not.toContain('<img src=x');
    for (const bad of [
      '',
      'after=x',
      'after=1&limit=999',
      'after=1&provider=%20bad%20name',
      'after=1&after=2',
    ]) {
      const r = await s.app.inject({ url: `/log/rows?${bad}` });
      expect(r.statusCode, bad).toBe(400);
      expect(r.json()).toMatchObject({ code: 'invalid_filter' });
    }
  });
});
