import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listEvents } from '../../projections/log.queries.ts';
import { deliveryDetail } from '../../src/deliveries/read.ts';
import { chatHeaders, codehostHeaders, type Hookline, SECRETS, startHookline } from './harness.ts';

const stripe = new Stripe('sk_test_not_used');
let h: Hookline;

beforeAll(async () => {
  h = await startHookline({ HOOKLINE_MAX_BODY_BYTES: '4096' });
});
afterAll(async () => {
  await h?.close();
});

const post = (url: string, payload: string | Buffer, headers: Record<string, string>) =>
  h.app.inject({ method: 'POST', url, payload, headers });

describe('signed receivers (spec 4.1)', () => {
  it('accepts a signed codehost delivery: 202 IngestAck, durable, in the log', async () => {
    const body = JSON.stringify({ ref: 'refs/heads/main', n: 1 });
    const before = await h.deliveries();
    const res = await post(
      '/webhooks/codehost',
      body,
      await codehostHeaders(body, { 'x-github-delivery': randomUUID() }),
    );
    expect(res.statusCode).toBe(202);
    const ack = res.json();
    expect(ack).toEqual({
      id: before + 1,
      provider: 'codehost',
      trust_mode: 'signed',
      verified: true,
      received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(await h.deliveries()).toBe(before + 1);
    await h.settle();
    const detail = await deliveryDetail(h.runtime, ack.id);
    expect(detail).toMatchObject({
      id: ack.id,
      provider: 'codehost',
      event_type: 'push',
      verified: true,
      verify_detail: 'sha256 signature verified',
      content_type: 'application/json',
      payload: body,
      payload_size: Buffer.byteLength(body),
    });
    expect(detail!.headers['x-hub-signature-256']).toBe('«redacted»');
  });

  it('answers 401 for a missing, malformed or failing signature and persists nothing', async () => {
    const body = '{"a":1}';
    const before = await h.deliveries();
    for (const sig of [undefined, 'sha256=nothex', `sha256=${'0'.repeat(64)}`]) {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (sig) headers['x-hub-signature-256'] = sig;
      const res = await post('/webhooks/codehost', body, headers);
      expect(res.statusCode).toBe(401);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ status: 401, code: 'invalid_signature' });
    }
    expect(await h.deliveries()).toBe(before);
    const rejection = h.logs.filter((l) => l.includes('webhook rejected'));
    expect(rejection.length).toBeGreaterThanOrEqual(3);
    expect(rejection.join('')).not.toContain('0'.repeat(64));
  });

  it('accepts a payments delivery signed by the stripe package, and 401s one 301 s old', async () => {
    const body = JSON.stringify({ id: `evt_${randomUUID()}`, type: 'charge.succeeded', object: 'event' });
    const now = Math.floor(Date.now() / 1000);
    const ok = await post('/webhooks/payments', body, {
      'content-type': 'application/json',
      'stripe-signature': stripe.webhooks.generateTestHeaderString({
        payload: body,
        secret: SECRETS.payments,
        timestamp: now,
      }),
    });
    expect(ok.statusCode).toBe(202);
    expect(ok.json()).toMatchObject({ provider: 'payments', verified: true, trust_mode: 'signed' });
    const stale = await post('/webhooks/payments', body, {
      'content-type': 'application/json',
      'payments-signature': stripe.webhooks.generateTestHeaderString({
        payload: body,
        secret: SECRETS.payments,
        timestamp: now - 301,
      }),
    });
    expect(stale.statusCode).toBe(401);
  });

  it('answers 404 for an unknown provider and for a signed one without a secret', async () => {
    expect((await post('/webhooks/github', '{}', { 'content-type': 'application/json' })).statusCode).toBe(
      404,
    );
    const bare = await startHookline({ HOOKLINE_PAYMENTS_SECRET: '' });
    try {
      const res = await bare.app.inject({
        method: 'POST',
        url: '/webhooks/payments',
        payload: '{}',
        headers: { 'content-type': 'application/json' },
      });
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    } finally {
      await bare.close();
    }
  });

  it('answers 413 from Content-Length before reading, even unsigned, but 404 comes first', async () => {
    const big = 'x'.repeat(5000);
    const res = await post('/webhooks/codehost', big, { 'content-type': 'application/json' });
    expect(res.statusCode).toBe(413);
    expect(res.json()).toMatchObject({ code: 'payload_too_large' });
    expect((await post('/webhooks/nope', big, { 'content-type': 'application/json' })).statusCode).toBe(404);
  });

  it('chat: 400 without the timestamp header, 200 with the challenge for a signed handshake (nothing stored)', async () => {
    const body = JSON.stringify({ type: 'url_verification', challenge: 'c-123', token: 'legacy' });
    const headers = chatHeaders(body);
    const { 'x-chat-request-timestamp': _ts, ...noTs } = headers;
    expect((await post('/webhooks/chat', body, noTs)).statusCode).toBe(400);
    const before = await h.deliveries();
    const res = await post('/webhooks/chat', body, headers);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ challenge: 'c-123' });
    expect(await h.deliveries()).toBe(before);
    const unsigned = await post('/webhooks/chat', body, {
      ...headers,
      'x-chat-signature': `v0=${'1'.repeat(64)}`,
    });
    expect(unsigned.statusCode).toBe(401);
  });

  it('400 for a body that is not the declared type or a type other than JSON and form, after the signature', async () => {
    const notJson = '{"broken":';
    expect((await post('/webhooks/codehost', notJson, await codehostHeaders(notJson))).statusCode).toBe(400);
    const text = 'hello';
    const res = await post('/webhooks/codehost', text, {
      ...(await codehostHeaders(text)),
      'content-type': 'text/plain',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 'unsupported_content_type' });
    const weird = await post('/webhooks/codehost', text, {
      ...(await codehostHeaders(text)),
      'content-type': 'not a type',
    });
    expect(weird.statusCode).toBe(400);
    // The signature is checked first: an unsigned body of the wrong type is a 401.
    expect((await post('/webhooks/codehost', text, { 'content-type': 'text/plain' })).statusCode).toBe(401);
  });

  it('stores a redelivery with the same external id once and answers with the original id', async () => {
    const body = JSON.stringify({ again: true });
    const delivery = randomUUID();
    const first = await post(
      '/webhooks/codehost',
      body,
      await codehostHeaders(body, { 'x-github-delivery': delivery }),
    );
    const before = await h.deliveries();
    const second = await post(
      '/webhooks/codehost',
      body,
      await codehostHeaders(body, { 'x-github-delivery': delivery }),
    );
    expect(first.statusCode).toBe(202);
    expect(second.statusCode).toBe(202);
    expect(second.json().id).toBe(first.json().id);
    expect(await h.deliveries()).toBe(before);
  });

  it('preserves a non-UTF-8 form body byte for byte', async () => {
    const bytes = Buffer.from([0x61, 0x3d, 0xff, 0xfe, 0x00, 0x80, 0x26, 0x62, 0x3d, 0xc3, 0x28]);
    const res = await post('/webhooks/codehost', bytes, {
      ...(await codehostHeaders(bytes)),
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(res.statusCode).toBe(202);
    await h.settle();
    const detail = await deliveryDetail(h.runtime, res.json().id);
    expect(Buffer.from(detail!.payload_bytes).equals(bytes)).toBe(true);
    expect(detail!.payload_size).toBe(bytes.length);
  });
});

describe('the log read model', () => {
  it('lists newest first with filters and an opaque cursor; refuses a bad filter', async () => {
    await h.settle();
    const all = await listEvents(h.runtime.db, {}, undefined, 2);
    expect(all.events).toHaveLength(2);
    expect(all.next_cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    const next = await listEvents(h.runtime.db, {}, all.next_cursor!, 2);
    expect(next.events[0]!.id).toBeLessThan(all.events[1]!.id);
    const payments = await listEvents(h.runtime.db, { provider: 'payments' });
    expect(payments.events.every((e) => e.provider === 'payments')).toBe(true);
    expect(payments.events.length).toBeGreaterThan(0);
    const since = await listEvents(h.runtime.db, { since: String(all.events[0]!.id) });
    expect(since.events.map((e) => e.id)).toEqual([all.events[0]!.id]);
    await expect(listEvents(h.runtime.db, { provider: 'nope:x' })).rejects.toMatchObject({
      code: 'invalid_filter',
      extensions: { field: 'provider' },
    });
    await expect(listEvents(h.runtime.db, {}, 'garbage!')).rejects.toMatchObject({
      extensions: { field: 'cursor' },
    });
    await expect(listEvents(h.runtime.db, {}, undefined, 500)).rejects.toMatchObject({
      extensions: { field: 'limit' },
    });
    await expect(listEvents(h.runtime.db, { since: 'yesterday' })).rejects.toMatchObject({
      extensions: { field: 'since' },
    });
    expect(await deliveryDetail(h.runtime, 999_999)).toBeUndefined();
  });
});
