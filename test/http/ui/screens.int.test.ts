import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedDeliveries } from './seed.ts';
import { CODEHOST_SECRET, startTestServer, type TestServer } from './support.ts';

const hostile = {
  script: '<script>window.__pwned = 1</script>',
  img: '<img src=x onerror="window.__pwned = 2">',
  textarea: '</textarea><svg onload=alert(3)>',
};

let s: TestServer;
let ids: number[];
const inject = (url: string, headers: Record<string, string> = {}) => s.app.inject({ url, headers });

beforeAll(async () => {
  s = await startTestServer();
  const t0 = Date.parse('2026-03-01T10:00:00.000Z');
  ids = await seedDeliveries(s.runtime, [
    { provider: 'codehost', event_type: 'push', received_at: new Date(t0) },
    { provider: 'codehost', event_type: 'pull_request', received_at: new Date(t0 + 1000) },
    {
      provider: 'generic:ci',
      trust_mode: 'token',
      verified: false,
      verify_detail: 'token ok',
      event_type: 'build',
      received_at: new Date(t0 + 2000),
    },
    {
      provider: 'codehost',
      event_type: hostile.script,
      received_at: new Date(t0 + 3000),
      payload: JSON.stringify(hostile),
      headers: { 'x-evil': hostile.img, 'x-area': hostile.textarea, 'x-hub-signature-256': '«redacted»' },
    },
    {
      provider: 'codehost',
      event_type: null,
      received_at: new Date(t0 + 4000),
      payload: new Uint8Array([0x7b, 0xff, 0x00, 0x7d]),
    },
  ]);
});

afterAll(async () => {
  await s?.close();
});

describe('security headers', () => {
  it('sends a strict CSP without inline script or style, and the other headers, on every screen', async () => {
    for (const url of [
      '/',
      '/log',
      `/log/${ids[0]}`,
      '/providers',
      '/settings',
      '/log/999999',
      '/log?limit=0',
    ]) {
      const res = await inject(url);
      const csp = String(res.headers['content-security-policy']);
      expect(csp, url).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).not.toContain('unsafe-eval');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['referrer-policy']).toBe('same-origin');
    }
  });

  it('has no inline script and no style attribute in any page', async () => {
    for (const url of ['/', '/log', `/log/${ids[3]}`, '/providers', '/settings']) {
      const html = (await inject(url)).body;
      for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)) {
        expect(m[1], url).toMatch(/src="\/static\//);
        expect(m[2]).toBe('');
      }
      for (const [tag] of html.matchAll(/<[a-z][^>]*>/gi)) {
        expect(tag, url).not.toMatch(/\sstyle=/i);
        expect(tag, url).not.toMatch(/\son[a-z]+=/i);
      }
    }
  });
});

describe('static files', () => {
  it('serves htmx from the npm package with a versioned, immutable URL', async () => {
    const html = (await inject('/')).body;
    const src = /<script src="(\/static\/htmx\.min\.js\?v=[^"]+)"/.exec(html)?.[1];
    expect(src).toBeDefined();
    const res = await inject(src!);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/javascript/);
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const fromPackage = readFileSync(createRequire(import.meta.url).resolve('htmx.org/dist/htmx.min.js'));
    expect(res.rawPayload.equals(fromPackage)).toBe(true);
  });

  it('revalidates an unversioned URL with its ETag', async () => {
    const first = await inject('/static/app.css');
    expect(first.headers['cache-control']).toBe('public, max-age=300');
    const again = await inject('/static/app.css', { 'if-none-match': String(first.headers.etag) });
    expect(again.statusCode).toBe(304);
    expect((await inject('/static/nope.js')).statusCode).toBe(404);
  });
});

describe('dashboard', () => {
  it('shows the connection strip and each provider with its 24-hour count and last event', async () => {
    const html = (await inject('/')).body;
    expect(html).toMatch(/class="strip" data-connection-indicator data-connection="(receiving|idle)"/);
    expect(html).toContain('data-provider="codehost"');
    expect(html).toContain('data-provider="generic:ci"');
    expect(html).toContain('data-provider="payments"');
    // Seeded in March 2026 by their received_at: older than 24 hours for the count, shown as last event.
    const codehost = /data-provider="codehost"[\s\S]*?<\/article>/.exec(html)![0];
    expect(codehost).toContain('datetime="2026-03-01T10:00:04.000Z"');
    expect(codehost).toContain('data-configured="true"');
    expect(codehost).toContain('data-field="enabled">Enabled<');
  });

  it('shows a signed provider without its secret as not configured, naming the variable (issue 15)', async () => {
    const html = (await inject('/')).body;
    for (const [name, variable] of [
      ['payments', 'HOOKLINE_PAYMENTS_SECRET'],
      ['chat', 'HOOKLINE_CHAT_SECRET'],
    ]) {
      const card = new RegExp(`data-provider="${name}"[\\s\\S]*?</article>`).exec(html)![0];
      expect(card).toContain('data-configured="false"');
      expect(card).toContain('data-field="enabled">Not configured<');
      expect(card).toContain(`Set <code>${variable}</code> to receive deliveries.`);
      expect(card).not.toContain('Enabled');
    }
    const providers = (await inject('/providers')).body;
    const row = /data-provider-row="payments"[\s\S]*?<\/tr>/.exec(providers)![0];
    expect(row).toContain('data-configured="false"');
    expect(row).toContain(
      '<strong>Not configured</strong>: deliveries get 404 until <code>HOOKLINE_PAYMENTS_SECRET</code> is set',
    );
    const json = (await inject('/providers', { accept: 'application/json' })).json() as {
      name: string;
      configured: boolean;
      configure_with: string | null;
    }[];
    expect(json.find((p) => p.name === 'chat')).toMatchObject({
      configured: false,
      configure_with: 'HOOKLINE_CHAT_SECRET',
    });
    expect(json.find((p) => p.name === 'codehost')).toMatchObject({ configured: true });
  });
});

describe('log', () => {
  // Rows of the table, not the empty row of the live script's <template>.
  const rowIds = (html: string) =>
    [
      ...html.replace(/<template[\s\S]*?<\/template>/g, '').matchAll(/<tr class="log-row" data-id="(\d+)"/g),
    ].map((m) => Number(m[1]));

  it('lists newest first as a full page, and only the table fragment for htmx', async () => {
    const full = await inject('/log');
    expect(full.headers['content-type']).toMatch(/^text\/html/);
    expect(full.body).toMatch(/^<!doctype html>/i);
    expect(rowIds(full.body)).toEqual([...ids].reverse());
    const fragment = await inject('/log', { 'hx-request': 'true' });
    expect(fragment.body).not.toMatch(/<html/i);
    expect(fragment.body).toMatch(/^\s*<section id="log-results"/);
    expect(rowIds(fragment.body)).toEqual([...ids].reverse());
    expect(fragment.headers.vary).toMatch(/HX-Request/);
    const restore = await inject('/log', { 'hx-request': 'true', 'hx-history-restore-request': 'true' });
    expect(restore.body).toMatch(/<html/i);
  });

  it('filters by provider, event type and since (a time or an event id)', async () => {
    expect(rowIds((await inject('/log?provider=generic%3Aci')).body)).toEqual([ids[2]]);
    expect(rowIds((await inject('/log?event_type=pull_request')).body)).toEqual([ids[1]]);
    expect(rowIds((await inject(`/log?since=${ids[3]}`)).body)).toEqual([ids[4], ids[3]]);
    expect(rowIds((await inject('/log?since=2026-03-01T10:00:03Z')).body)).toEqual([ids[4], ids[3]]);
  });

  it('pages with an opaque cursor', async () => {
    const first = (await inject('/log?limit=2')).body;
    expect(rowIds(first)).toEqual([ids[4], ids[3]]);
    const older = /href="(\/log\?[^"]*cursor=[^"]+)"/.exec(first)?.[1]?.replaceAll('&amp;', '&');
    expect(older).toBeDefined();
    const second = (await inject(older!)).body;
    expect(rowIds(second)).toEqual([ids[2], ids[1]]);
    expect(second).toContain('data-live="false"');
  });

  it('answers a browser with a page in the layout, and programs and htmx with the problem document', async () => {
    const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
    for (const [url, status, code] of [
      ['/nope', 404, 'not_found'],
      ['/log/999999', 404, 'not_found'],
      ['/log?limit=0', 400, 'invalid_filter'],
    ] as const) {
      const page = await inject(url, browser);
      expect(page.statusCode, url).toBe(status);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.headers['content-security-policy']).toContain("script-src 'self'");
      expect(page.body).toContain(`data-problem="${code}"`);
      expect(page.body).toContain('<nav class="nav" aria-label="Main">');
      const programs: Record<string, string>[] = [
        {},
        { accept: 'application/json' },
        { ...browser, 'hx-request': 'true' },
      ];
      for (const headers of programs) {
        const res = await inject(url, headers);
        expect(res.statusCode).toBe(status);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.json()).toMatchObject({ status, code });
      }
    }
    // The API and the other program surfaces keep their problem documents even for a browser.
    for (const url of ['/api/v1/nope', '/webhooks/nope', '/mcp/nope', '/static/nope.css']) {
      const res = await inject(url, browser);
      expect(res.headers['content-type'], url).toMatch(/^application\/(problem\+)?json/);
    }
  });

  it('answers 400 with a problem document naming the invalid filter', async () => {
    const cases: [string, string][] = [
      ['/log?provider=nope', 'provider'],
      ['/log?since=yesterday', 'since'],
      ['/log?cursor=%%%', 'cursor'],
      ['/log?cursor=bm90LWEtY3Vyc29y', 'cursor'],
      ['/log?limit=0', 'limit'],
      ['/log?limit=201', 'limit'],
      ['/log?limit=ten', 'limit'],
      ['/log?provider=codehost&provider=chat', 'provider'],
    ];
    for (const [url, field] of cases) {
      const res = await inject(url);
      expect(res.statusCode, url).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ status: 400, code: 'invalid_filter', field });
    }
  });

  it('renders attacker-controlled event types escaped', async () => {
    const html = (await inject('/log')).body;
    expect(html).not.toContain(hostile.script);
    expect(html).toContain('&lt;script&gt;window.__pwned = 1&lt;/script&gt;');
  });
});

describe('detail', () => {
  it('answers 404 with a problem document for an unknown or malformed id', async () => {
    for (const id of ['999999', 'abc', '-1']) {
      const res = await inject(`/log/${id}`);
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ status: 404, code: 'not_found' });
    }
  });

  it('shows verification, trust and sanitized headers', async () => {
    const html = (await inject(`/log/${ids[2]}`)).body;
    expect(html).toContain('token ok');
    expect(html).toContain('data-trust="token"');
    expect(html).toContain('data-verified="false"');
    const signed = (await inject(`/log/${ids[3]}`)).body;
    expect(signed).toContain('«redacted»');
  });

  it('renders hostile payloads and headers inert: escaped text, never markup', async () => {
    const html = (await inject(`/log/${ids[3]}`)).body;
    for (const value of Object.values(hostile)) expect(html).not.toContain(value);
    expect(html).not.toMatch(/<img src=x/);
    expect(html).not.toMatch(/<svg onload/);
    expect(html).not.toMatch(/<\/textarea>/);
    expect(html).toContain('&lt;img src=x onerror=&quot;window.__pwned = 2&quot;&gt;');
    expect(html).toContain('&lt;/textarea&gt;&lt;svg onload=alert(3)&gt;');
    // The pretty view and the raw view both show the payload.
    expect(html.match(/window.__pwned = 1/g)?.length).toBeGreaterThanOrEqual(2);
  });

  it('shows bytes that are not UTF-8 escaped, and no pretty view for them', async () => {
    const html = (await inject(`/log/${ids[4]}`)).body;
    expect(html).toContain(
      '<span class="esc" title="not UTF-8 text: shown as escaped bytes">&#92;xFF&#92;x00</span>',
    );
    expect(html).not.toContain('Pretty-printed JSON');
    expect(html).toContain('Contains bytes that are not UTF-8 text');
  });
});

describe('providers', () => {
  it('lists every provider with kind, family, trust, path or channel and secret status, never the secret', async () => {
    const html = (await inject('/providers')).body;
    for (const name of ['codehost', 'payments', 'chat', 'generic:ci'])
      expect(html).toContain(`data-provider-row="${name}"`);
    expect(html).toContain('/webhooks/codehost');
    expect(html).toContain('data-secret="configured"');
    expect(html).toContain('data-secret="missing"');
    expect(html).toContain('hx-post="/providers/codehost/enabled"');
    expect(html).toContain('role="switch" aria-checked="true"');
    expect(html).not.toContain(CODEHOST_SECRET);
    expect(html).toContain('action="/providers"');
  });
});
