import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { policyOf, uiDirectives } from '../../../src/http/security-headers.ts';
import { startTestServer, type TestServer } from './support.ts';

const BASE_URL = 'https://hooks.example.com';
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ env: { HOOKLINE_BASE_URL: BASE_URL } });
});

afterAll(async () => {
  await s?.close();
});

const post = (url: string, fields: Record<string, string>, headers: Record<string, string>) =>
  s.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(fields).toString(),
  });

const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin' };

const securityHeaders = {
  'content-security-policy':
    "default-src 'none';script-src 'self';style-src 'self';img-src 'self';connect-src 'self';" +
    "form-action 'self';base-uri 'none';frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  // An https base URL: browsers are told to stay on https.
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
};

it('documents the policy it sends', () => {
  expect(policyOf(uiDirectives)).toBe(securityHeaders['content-security-policy']);
});

function expectSecurityHeaders(res: { headers: Record<string, unknown> }, what: string): void {
  for (const [name, value] of Object.entries(securityHeaders)) {
    expect(res.headers[name], `${what}: ${name}`).toBe(value);
  }
}

describe('browser safety of the form posts (docs/reference/screens.md, Browser safety)', () => {
  it('gives the provider routes the headers of every other screen: fragments and problems alike', async () => {
    const created = await post('/providers', { name: 'headers', trust_mode: 'open' }, SAME_ORIGIN);
    expect(created.statusCode).toBe(201);
    expect(created.headers['content-type']).toMatch(/^text\/html/);
    expectSecurityHeaders(created, 'POST /providers');
    const toggled = await post('/providers/generic%3Aheaders/enabled', { enabled: 'true' }, SAME_ORIGIN);
    expect(toggled.statusCode).toBe(200);
    expect(toggled.body).toContain('data-provider-toggle="generic:headers"');
    expectSecurityHeaders(toggled, 'POST /providers/{name}/enabled');
    const refused = await post('/providers', { name: 'x' }, { 'sec-fetch-site': 'cross-site' });
    expect(refused.statusCode).toBe(403);
    expectSecurityHeaders(refused, 'a 403 problem');
    const invalid = await post('/providers', { name: 'Bad Name' }, SAME_ORIGIN);
    expect(invalid.statusCode).toBe(400);
    expectSecurityHeaders(invalid, 'a 400 problem');
    for (const url of ['/', '/log', '/providers', '/settings', '/static/app.css', '/api/v1/openapi.json']) {
      expectSecurityHeaders(await s.app.inject({ url }), `GET ${url}`);
    }
  });

  it('answers 404 for an unknown provider whatever `enabled` says', async () => {
    const forms: Record<string, string>[] = [{}, { enabled: 'maybe' }, { enabled: 'true' }];
    for (const fields of forms) {
      const res = await post('/providers/generic%3Aghost/enabled', fields, SAME_ORIGIN);
      expect(res.statusCode, JSON.stringify(fields)).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ status: 404, code: 'not_found' });
      expectSecurityHeaders(res, 'a 404 problem');
    }
    // A known one with a bad value is still the 400 it was.
    const bad = await post('/providers/generic%3Aheaders/enabled', { enabled: 'maybe' }, SAME_ORIGIN);
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ field: 'enabled' });
  });

  it('accepts the configured origin, and the Host only when it is a loopback name', async () => {
    const cases: [Record<string, string>, number][] = [
      [{ origin: BASE_URL, host: 'hooks.example.com' }, 200],
      [{ origin: BASE_URL, host: '10.0.0.5:8080' }, 200], // behind a proxy that rewrites Host
      [{ origin: 'http://127.0.0.1:8080', host: '127.0.0.1:8080' }, 200],
      [{ origin: 'http://localhost:8080', host: 'localhost:8080' }, 200],
      [{ origin: 'http://[::1]:8080', host: '[::1]:8080' }, 200],
      // DNS rebinding: the attacker's name resolves to this server; Host and Origin both carry it.
      [{ origin: 'http://rebound.example:8080', host: 'rebound.example:8080' }, 403],
      [{ origin: 'http://hooks.example.com', host: 'hooks.example.com' }, 403], // not the base URL's scheme
      [{ origin: 'http://localhost:3000', host: 'localhost:8080' }, 403], // another local app
      [{ origin: 'null', host: '127.0.0.1:8080' }, 403],
      [{ 'sec-fetch-site': 'none', origin: 'null', host: '127.0.0.1:8080' }, 403],
      [{ 'sec-fetch-site': 'same-site', origin: BASE_URL }, 403], // Sec-Fetch-Site decides
    ];
    for (const [headers, status] of cases) {
      const res = await post('/providers/generic%3Aheaders/enabled', { enabled: 'true' }, headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(status);
      if (status === 403) expect(res.json()).toMatchObject({ code: 'cross_site' });
    }
  });

  it('refuses a post with neither Sec-Fetch-Site nor Origin unless it asks for JSON only (the CLI)', async () => {
    for (const accept of [undefined, 'text/html', 'text/html,application/json', '*/*']) {
      const res = await post(
        '/providers',
        { name: 'headerless', trust_mode: 'open' },
        accept === undefined ? {} : { accept },
      );
      expect(res.statusCode, String(accept)).toBe(403);
      expect(res.json()).toMatchObject({ code: 'cross_site' });
    }
    const cli = await post(
      '/providers',
      { name: 'headerless', trust_mode: 'open' },
      { accept: 'application/json' },
    );
    expect(cli.statusCode).toBe(201);
    expect(cli.json()).toMatchObject({ name: 'generic:headerless', enabled: false });
    const toggle = await post(
      '/providers/generic%3Aheaderless/enabled',
      { enabled: 'true' },
      { accept: 'application/json' },
    );
    expect(toggle.statusCode).toBe(200);
    expect(toggle.json()).toMatchObject({ enabled: true });
  });
});
