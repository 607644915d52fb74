import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/http/redact-url.ts';
import { checkBody } from '../../src/ingest/body.ts';
import { extractIdentity } from '../../src/ingest/extract.ts';
import { REDACTED, sanitizeHeaders } from '../../src/ingest/sanitize.ts';
import { parseTrustedProxies, resolveSourceIp } from '../../src/ingest/source-ip.ts';
import { generateToken, hashToken, presentedToken, tokenMatches } from '../../src/ingest/token.ts';
import { uuidv7 } from '../../src/ingest/uuid7.ts';

const enc = new TextEncoder();

describe('sanitizeHeaders', () => {
  it('redacts the signature headers of both naming families, credentials and cookies', () => {
    const out = sanitizeHeaders({
      'x-hub-signature-256': 'sha256=abc',
      'payments-signature': 't=1,v1=abc',
      'stripe-signature': 't=1,v1=abc',
      'x-chat-signature': 'v0=abc',
      'x-slack-signature': 'v0=abc',
      authorization: 'Bearer tok',
      'x-hookline-token': 'tok',
      cookie: 'a=b',
      'x-gitlab-token': 'glt',
      'content-type': 'application/json',
      'x-github-event': 'push',
    });
    for (const name of [
      'x-hub-signature-256',
      'payments-signature',
      'stripe-signature',
      'x-chat-signature',
      'x-slack-signature',
      'authorization',
      'x-hookline-token',
      'cookie',
      'x-gitlab-token',
    ]) {
      expect(out[name], name).toBe(REDACTED);
    }
    expect(out['content-type']).toBe('application/json');
    expect(out['x-github-event']).toBe('push');
  });

  it('removes a known token value wherever it hides, and joins repeated headers', () => {
    const token = 'Zm9vYmFyYmF6cXV4cXV1eF9zZWNyZXRfdG9rZW4';
    const out = sanitizeHeaders({ referer: `https://x.test/?token=${token}`, 'x-multi': ['a', 'b'] }, [
      token,
    ]);
    expect(out.referer).toBe(`https://x.test/?token=${REDACTED}`);
    expect(out['x-multi']).toBe('a, b');
  });
});

describe('redactUrl', () => {
  it('hides tokens in generic paths, per-webhook paths and token= query values', () => {
    expect(redactUrl('/webhooks/generic/ci/abcDEF_123-xyz')).toBe('/webhooks/generic/ci/«redacted»');
    expect(redactUrl('/webhooks/generic/ci/abc?x=1')).toBe('/webhooks/generic/ci/«redacted»?x=1');
    expect(redactUrl('/webhooks/w/secretToken')).toBe('/webhooks/w/«redacted»');
    expect(redactUrl('/webhooks/generic/ci?token=abc&x=1')).toBe('/webhooks/generic/ci?token=«redacted»&x=1');
    expect(redactUrl('/webhooks/generic/ci?a=1&Token=abc')).toBe('/webhooks/generic/ci?a=1&Token=«redacted»');
    expect(redactUrl('/log?provider=codehost')).toBe('/log?provider=codehost');
    expect(redactUrl('/webhooks/generic/ci')).toBe('/webhooks/generic/ci');
  });

  it('never lets a token through, whatever the URL (fast-check)', () => {
    const token = fc.stringMatching(/^[A-Za-z0-9_-]{20,43}$/);
    fc.assert(
      fc.property(
        token,
        fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,20}$/),
        fc.constantFrom('path', 'query', 'w'),
        (t, name, where) => {
          const url =
            where === 'path'
              ? `/webhooks/generic/${name}/${t}`
              : where === 'w'
                ? `/webhooks/w/${t}?x=1`
                : `/webhooks/generic/${name}?a=b&token=${t}`;
          expect(redactUrl(url)).not.toContain(t);
        },
      ),
    );
  });
});

describe('resolveSourceIp', () => {
  const trusted = parseTrustedProxies(['10.0.0.0/8', '::1']);
  it('ignores X-Forwarded-For from an untrusted peer', () => {
    expect(resolveSourceIp('203.0.113.9', '1.2.3.4', trusted)).toBe('203.0.113.9');
    expect(resolveSourceIp('203.0.113.9', '1.2.3.4', [])).toBe('203.0.113.9');
  });
  it('takes the first untrusted hop from the right behind trusted proxies', () => {
    expect(resolveSourceIp('10.1.1.1', '6.6.6.6, 198.51.100.7, 10.2.2.2', trusted)).toBe('198.51.100.7');
    expect(resolveSourceIp('::ffff:10.1.1.1', '198.51.100.7', trusted)).toBe('198.51.100.7');
    expect(resolveSourceIp('::1', '[2001:db8::1]:443', trusted)).toBe('2001:db8::1');
  });
  it('normalizes IPv4-mapped peers and keeps the last good hop on garbage', () => {
    expect(resolveSourceIp('::ffff:192.0.2.1', undefined, trusted)).toBe('192.0.2.1');
    expect(resolveSourceIp('10.1.1.1', 'garbage, 10.3.3.3', trusted)).toBe('10.3.3.3');
  });
});

describe('checkBody', () => {
  it('accepts JSON objects and arrays, and any form body', () => {
    expect(checkBody('application/json; charset=utf-8', enc.encode('{"a":1}')).ok).toBe(true);
    expect(checkBody('application/json', enc.encode('[1]')).ok).toBe(true);
    expect(checkBody('application/x-www-form-urlencoded', new Uint8Array([0x61, 0x3d, 0xff, 0xfe])).ok).toBe(
      true,
    );
  });
  it('refuses unreadable JSON (400 invalid_body) and other content types (400 unsupported_content_type)', () => {
    expect(checkBody('application/json', enc.encode('{"a":'))).toMatchObject({
      ok: false,
      code: 'invalid_body',
    });
    expect(checkBody('application/json', enc.encode('42'))).toMatchObject({
      ok: false,
      code: 'invalid_body',
    });
    expect(checkBody('application/json', new Uint8Array([0x7b, 0xff, 0x7d]))).toMatchObject({
      ok: false,
      code: 'invalid_body',
    });
    expect(checkBody('text/plain', enc.encode('hi'))).toMatchObject({
      ok: false,
      code: 'unsupported_content_type',
    });
    expect(checkBody(undefined, enc.encode('hi'))).toMatchObject({
      ok: false,
      code: 'unsupported_content_type',
    });
  });
});

describe('extractIdentity', () => {
  const json = (v: unknown) => {
    const r = checkBody('application/json', enc.encode(JSON.stringify(v)));
    if (!r.ok) throw new Error('bad');
    return r.body;
  };
  it('codehost: from the event and delivery headers, neutral or real', () => {
    expect(
      extractIdentity('codehost', { 'x-github-event': 'push', 'x-github-delivery': 'd-1' }, json({})),
    ).toEqual({
      event_type: 'push',
      external_id: 'd-1',
    });
    expect(
      extractIdentity('codehost', { 'x-codehost-event': 'issues', 'x-codehost-delivery': 'd-2' }, json({})),
    ).toEqual({
      event_type: 'issues',
      external_id: 'd-2',
    });
  });
  it('payments: from the body type and id', () => {
    expect(extractIdentity('payments', {}, json({ id: 'evt_1', type: 'charge.succeeded' }))).toEqual({
      event_type: 'charge.succeeded',
      external_id: 'evt_1',
    });
  });
  it('chat: event.type of a callback and its event_id; a form command', () => {
    expect(
      extractIdentity(
        'chat',
        {},
        json({ type: 'event_callback', event_id: 'Ev1', event: { type: 'message' } }),
      ),
    ).toEqual({
      event_type: 'message',
      external_id: 'Ev1',
    });
    const form = checkBody('application/x-www-form-urlencoded', enc.encode('command=%2Fdeploy&text=now'));
    if (!form.ok) throw new Error('bad');
    expect(extractIdentity('chat', {}, form.body)).toEqual({ event_type: '/deploy', external_id: null });
  });
  it('generic: type from header or body, id from headers only', () => {
    expect(
      extractIdentity('generic', { 'x-hookline-delivery': 'x1' }, json({ type: 'build', id: 'res-9' })),
    ).toEqual({
      event_type: 'build',
      external_id: 'x1',
    });
    expect(extractIdentity('generic', {}, json({ id: 'res-9' }))).toEqual({
      event_type: null,
      external_id: null,
    });
  });
});

describe('tokens', () => {
  it('generates 32+ random bytes, stores a hash, compares by hash', () => {
    const t = generateToken();
    expect(Buffer.from(t, 'base64url').length).toBeGreaterThanOrEqual(32);
    expect(tokenMatches(t, hashToken(t))).toBe(true);
    expect(tokenMatches(`${t}x`, hashToken(t))).toBe(false);
    expect(tokenMatches('', hashToken(t))).toBe(false);
  });
  it('reads Bearer first, then X-Hookline-Token, then the path, then the query', () => {
    expect(presentedToken({ authorization: 'Bearer a', 'x-hookline-token': 'b' }, 'c', 'd')).toBe('a');
    expect(presentedToken({ 'x-hookline-token': 'b' }, 'c', 'd')).toBe('b');
    expect(presentedToken({}, 'c', 'd')).toBe('c');
    expect(presentedToken({ authorization: 'Basic x' }, undefined, 'd')).toBe('d');
    expect(presentedToken({}, undefined, undefined)).toBeUndefined();
  });
});

describe('uuidv7', () => {
  it('is a version 7 UUID whose first 48 bits are the time, so ids sort by time', () => {
    const at = Date.parse('2025-06-01T12:00:00.000Z');
    const id = uuidv7(at);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
    expect(uuidv7(at) < uuidv7(at + 1)).toBe(true);
    expect(uuidv7(at)).not.toBe(uuidv7(at));
  });
});
