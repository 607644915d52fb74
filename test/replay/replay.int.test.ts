import { request } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createReplayClient, type ReplayClient } from '../../src/replay/client.ts';
import { createReplayDispatcher, isReplayRefused } from '../../src/replay/dispatcher.ts';
import { type ClassifyAddress, classifyAddress, type ResolveHost } from '../../src/replay/ssrf.ts';
import { makeCert, startServer, type TestCert, type TestServer } from './servers.ts';

// Replay over real HTTPS. `target` (127.0.0.2) plays a public host: the classification injected
// here counts that one address as public and leaves every other rule as in production. `loopback`
// (127.0.0.1) stands for an internal service and must never be reached.
let cert: TestCert;
let target: TestServer;
let loopback: TestServer;
let client: ReplayClient;

const classify: ClassifyAddress = (ip) => (ip === '127.0.0.2' ? { public: true } : classifyAddress(ip));
const lookups = new Map<string, number>();
const resolve: ResolveHost = async (hostname) => {
  const n = (lookups.get(hostname) ?? 0) + 1;
  lookups.set(hostname, n);
  if (hostname === 'replay.test') return ['127.0.0.2'];
  if (hostname === 'internal.test') return ['10.0.0.7'];
  if (hostname === 'loopback.test') return ['127.0.0.1'];
  // DNS rebinding: public when checked at call time, loopback by the time the socket is dialed.
  if (hostname === 'rebind.test') return n === 1 ? ['127.0.0.2'] : ['127.0.0.1'];
  throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
};

beforeAll(async () => {
  cert = makeCert();
  loopback = await startServer('127.0.0.1', cert, (_req, res) => {
    res.writeHead(200).end('reached the internal service');
  });
  target = await startServer('127.0.0.2', cert, (req, res) => {
    switch (req.url) {
      case '/hook':
        res.writeHead(202, { 'content-type': 'text/plain' }).end('accepted');
        return;
      case '/redirect-loopback':
        res.writeHead(302, { location: `https://127.0.0.1:${loopback.port}/landed` }).end();
        return;
      case '/redirect-public':
        res.writeHead(307, { location: `${target.origin()}/landed` }).end();
        return;
      case '/stall-headers':
        return; // never answers
      case '/stall-body':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('partial');
        return; // never ends
      default:
        res.writeHead(200).end('ok');
    }
  });
  client = createReplayClient({
    classify,
    resolve,
    ca: cert.cert,
    headersTimeoutMs: 300,
    bodyTimeoutMs: 300,
  });
});
afterAll(async () => {
  await client?.close();
  await target?.close();
  await loopback?.close();
});
beforeEach(() => {
  target.seen.length = 0;
  loopback.seen.length = 0;
  lookups.clear();
});

const json = (text: string) => new TextEncoder().encode(text);

describe('a successful replay', () => {
  it('sends the body bytes and the content type exactly as given', async () => {
    const body = new Uint8Array([...json('{"a":1}\n'), ...Array.from({ length: 256 }, (_, i) => i)]);
    const contentType = 'application/vnd.acme+json; charset=UTF-8; profile="x y"';
    const result = await client.replay({
      target: `${target.origin()}/hook`,
      body,
      contentType,
      headers: { 'x-hookline-event-id': '42', 'Content-Type': 'text/evil' },
    });
    expect(result).toEqual({
      kind: 'delivered',
      target: `${target.origin()}/hook`,
      status: 202,
      location: null,
      responseSnippet: 'accepted',
    });
    expect(target.seen).toHaveLength(1);
    const seen = target.seen[0]!;
    expect(seen.method).toBe('POST');
    expect(Buffer.compare(seen.body, Buffer.from(body))).toBe(0);
    expect(seen.headers['content-type']).toBe(contentType);
    expect(seen.headers['content-length']).toBe(String(body.byteLength));
    expect(seen.headers['x-hookline-event-id']).toBe('42');
    expect(seen.headers['user-agent']).toBe('hookline-replay');
  });

  it('reaches a name through the guarded lookup, and sends no content type when there was none', async () => {
    const result = await client.replay({
      target: `https://replay.test:${target.port}/hook`,
      body: json('a=1&b=2'),
      contentType: null,
    });
    expect(result).toMatchObject({ kind: 'delivered', status: 202 });
    expect(target.seen[0]?.headers['content-type']).toBeUndefined();
    expect(target.seen[0]?.body.toString()).toBe('a=1&b=2');
    // Checked once at call time, and once more when the socket was dialed.
    expect(lookups.get('replay.test')).toBe(2);
  });
});

describe('the SSRF matrix: each refused, nothing internal reached', () => {
  const cases = (): [string, RegExp][] => [
    [`https://127.1:${loopback.port}/`, /127\.0\.0\.1 .*loopback/],
    [`https://0x7f000001:${loopback.port}/`, /127\.0\.0\.1 .*loopback/],
    [`https://017700000001:${loopback.port}/`, /127\.0\.0\.1 .*loopback/],
    [`https://[::ffff:127.0.0.1]:${loopback.port}/`, /IPv4-mapped/],
    [`https://[::ffff:7f00:1]:${loopback.port}/`, /IPv4-mapped/],
    [`https://0.0.0.0:${loopback.port}/`, /unspecified/],
    [`https://[::]:${loopback.port}/`, /unspecified/],
    ['https://169.254.169.254/latest/meta-data/', /cloud metadata/],
    ['https://100.64.0.1/', /100\.64\.0\.0\/10/],
    ['https://[64:ff9b::7f00:1]/', /NAT64/],
    ['https://[2002:7f00:1::]/', /6to4/],
    [`https://internal.test:${loopback.port}/`, /internal\.test resolves to 10\.0\.0\.7 .*private/],
    [`https://loopback.test:${loopback.port}/`, /loopback\.test resolves to 127\.0\.0\.1 .*loopback/],
    [`https://localhost:${loopback.port}/`, /loopback name/],
    [`https://a.example@127.0.0.1:${loopback.port}/`, /user information/],
    [`http://127.0.0.2:${target.port}/hook`, /only https/],
  ];

  it('refuses every case at call time with a clear reason', async () => {
    for (const [url, detail] of cases()) {
      const result = await client.replay({ target: url, body: json('{}'), contentType: 'application/json' });
      expect(result, url).toMatchObject({ kind: 'refused', phase: 'call' });
      expect(result.kind === 'refused' && result.detail, url).toMatch(detail);
    }
    expect(loopback.seen).toEqual([]);
    expect(target.seen).toEqual([]);
  });

  it('reports a redirect to loopback as the result and does not follow it', async () => {
    const result = await client.replay({
      target: `${target.origin()}/redirect-loopback`,
      body: json('{}'),
      contentType: 'application/json',
    });
    expect(result).toMatchObject({
      kind: 'delivered',
      status: 302,
      location: `https://127.0.0.1:${loopback.port}/landed`,
    });
    expect(loopback.seen).toEqual([]);
  });

  it('does not follow a redirect even to a public address', async () => {
    const result = await client.replay({
      target: `${target.origin()}/redirect-public`,
      body: json('{}'),
      contentType: 'application/json',
    });
    expect(result).toMatchObject({ kind: 'delivered', status: 307, location: `${target.origin()}/landed` });
    expect(target.seen.map((s) => s.url)).toEqual(['/redirect-public']);
  });
});

describe('the connect-time guard', () => {
  it('refuses a name that turns private between the check and the connect (DNS rebinding)', async () => {
    const result = await client.replay({
      target: `https://rebind.test:${loopback.port}/`,
      body: json('{}'),
      contentType: 'application/json',
    });
    expect(result).toMatchObject({ kind: 'refused', phase: 'connect', reason: 'address' });
    expect(result.kind === 'refused' && result.detail).toMatch(/rebind\.test resolves to 127\.0\.0\.1/);
    expect(loopback.seen).toEqual([]);
  });

  it('refuses IP literals that skip the lookup, when the dispatcher is used on its own', async () => {
    const dispatcher = createReplayDispatcher({ ca: cert.cert });
    try {
      for (const url of [
        `https://127.0.0.1:${loopback.port}/`,
        `https://[::ffff:127.0.0.1]:${loopback.port}/`,
      ]) {
        const error = await request(url, { dispatcher, method: 'POST', body: '{}' }).catch((e: unknown) => e);
        expect(isReplayRefused(error), url).toBe(true);
      }
      // The production resolver: localhost really resolves to loopback addresses.
      const error = await request(`https://localhost:${loopback.port}/`, { dispatcher }).catch(
        (e: unknown) => e,
      );
      expect(isReplayRefused(error)).toBe(true);
      expect((error as Error).message).toMatch(/localhost resolves to .*loopback/);
    } finally {
      await dispatcher.close();
    }
    expect(loopback.seen).toEqual([]);
  });
});

describe('failures and timeouts', () => {
  it('gives up on a target that never answers (headers timeout)', async () => {
    const result = await client.replay({
      target: `${target.origin()}/stall-headers`,
      body: json('{}'),
      contentType: null,
    });
    expect(result).toMatchObject({ kind: 'failed', reason: 'timeout' });
  });

  it('keeps the status when the response body stalls (body timeout)', async () => {
    const result = await client.replay({
      target: `${target.origin()}/stall-body`,
      body: json('{}'),
      contentType: null,
    });
    expect(result).toMatchObject({ kind: 'delivered', status: 200, responseSnippet: 'partial' });
  });

  it('verifies TLS: a certificate nobody trusts is a tls failure', async () => {
    const untrusting = createReplayClient({ classify, resolve });
    try {
      const result = await untrusting.replay({
        target: `${target.origin()}/hook`,
        body: json('{}'),
        contentType: null,
      });
      expect(result).toMatchObject({ kind: 'failed', reason: 'tls' });
    } finally {
      await untrusting.close();
    }
    expect(target.seen).toEqual([]);
  });
});
