import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryDetail } from '../../src/deliveries/read.ts';
import { codehostSignature } from '../support/senders.ts';
import { chatHeaders, codehostHeaders, type Hookline, hex, SECRETS, startHookline } from './harness.ts';

/**
 * Embedded mode over a real port: design.md's "Ingestion check order" where two checks
 * meet, the header names the real providers send, and simultaneous redeliveries, end to end
 * through Node's HTTP parser and Fastify. (postgres.int.test.ts does the same on PostgreSQL.)
 */

const LIMIT = 4096;
const stripe = new Stripe('sk_test_not_used');
let h: Hookline;
let base = '';

beforeAll(async () => {
  h = await startHookline({ HOOKLINE_MAX_BODY_BYTES: String(LIMIT) });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await h?.close();
});

const post = async (path: string, body: string, headers: Record<string, string>) => {
  const res = await fetch(`${base}${path}`, { method: 'POST', body, headers });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', json: () => JSON.parse(text) };
};

/** The operator's switch, as the UI posts it (same-origin form). */
async function setEnabled(name: string, enabled: boolean): Promise<void> {
  const res = await h.app.inject({
    method: 'POST',
    url: `/providers/${encodeURIComponent(name)}/enabled`,
    payload: new URLSearchParams({ enabled: String(enabled) }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
  });
  expect(res.json()).toMatchObject({ enabled });
}

const oversized = JSON.stringify({ pad: 'x'.repeat(LIMIT) });

describe('ingestion check order over HTTP (design.md)', () => {
  it('a disabled provider: 403 before the signature (not 401) and before the chat timestamp (not 400)', async () => {
    const body = '{"a":1}';
    await setEnabled('codehost', false);
    await setEnabled('chat', false);
    try {
      const unsigned: Record<string, string>[] = [
        { 'content-type': 'application/json' },
        { 'content-type': 'application/json', 'X-Hub-Signature-256': `sha256=${'0'.repeat(64)}` },
        { 'content-type': 'application/json', 'X-Hub-Signature-256': 'garbage' },
      ];
      for (const headers of unsigned) {
        const res = await post('/webhooks/codehost', body, headers);
        expect(res.status).toBe(403);
        expect(res.type).toMatch(/^application\/problem\+json/);
        expect(res.json()).toMatchObject({ status: 403, code: 'provider_disabled' });
      }
      const { 'x-chat-request-timestamp': _ts, ...noTimestamp } = chatHeaders(body);
      expect((await post('/webhooks/chat', body, noTimestamp)).status).toBe(403);
      expect(
        (await post('/webhooks/chat', body, { ...chatHeaders(body), 'x-chat-signature': 'v0=bad' })).status,
      ).toBe(403);
    } finally {
      await setEnabled('codehost', true);
      await setEnabled('chat', true);
    }
    // The same requests, enabled again, meet the later checks.
    expect((await post('/webhooks/codehost', body, { 'content-type': 'application/json' })).status).toBe(401);
    const { 'x-chat-request-timestamp': _ts, ...noTimestamp } = chatHeaders(body);
    expect((await post('/webhooks/chat', body, noTimestamp)).status).toBe(400);
  });

  it('a disabled provider with an oversized body: 413 (the size comes before the switch)', async () => {
    await setEnabled('codehost', false);
    try {
      const res = await post('/webhooks/codehost', oversized, await codehostHeaders(oversized));
      expect(res.status).toBe(413);
      expect(res.type).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ status: 413, code: 'payload_too_large' });
    } finally {
      await setEnabled('codehost', true);
    }
  });

  it('an unknown provider with an oversized body: 404 (the provider comes before the size)', async () => {
    for (const path of ['/webhooks/github', '/webhooks/generic/ghost', '/webhooks/generic/ghost/tok']) {
      const res = await post(path, oversized, await codehostHeaders(oversized));
      expect(res.status, path).toBe(404);
      expect(res.type).toMatch(/^application\/problem\+json/);
    }
  });
});

describe("the real providers' header names over HTTP", () => {
  const detail = async (id: number) => {
    await h.settle();
    return deliveryDetail(h.runtime, id);
  };

  it('codehost: X-GitHub-Event and X-GitHub-Delivery, as the neutral X-Codehost-* names', async () => {
    for (const [event, delivery] of [
      ['X-GitHub-Event', 'X-GitHub-Delivery'],
      ['X-Codehost-Event', 'X-Codehost-Delivery'],
    ] as const) {
      const body = JSON.stringify({ zen: event });
      const id = randomUUID();
      const headers = {
        'Content-Type': 'application/json',
        'X-Hub-Signature-256': await codehostSignature(SECRETS.codehost, body),
        [event]: 'pull_request',
        [delivery]: id,
      };
      const res = await post('/webhooks/codehost', body, headers);
      expect(res.status).toBe(202);
      const ack = res.json() as { id: number };
      expect(await detail(ack.id)).toMatchObject({ event_type: 'pull_request', external_id: id });
      expect((await post('/webhooks/codehost', body, headers)).json()).toMatchObject({ id: ack.id });
    }
  });

  it('payments: Stripe-Signature as the stripe package writes it', async () => {
    const body = JSON.stringify({ id: `evt_${randomUUID()}`, type: 'invoice.paid', object: 'event' });
    const signature = stripe.webhooks.generateTestHeaderString({ payload: body, secret: SECRETS.payments });
    const res = await post('/webhooks/payments', body, {
      'Content-Type': 'application/json',
      'Stripe-Signature': signature,
    });
    expect(res.status).toBe(202);
    const stored = await detail(res.json().id);
    expect(stored).toMatchObject({ event_type: 'invoice.paid', verify_detail: 'v1 signature verified' });
    expect(stored!.headers['stripe-signature']).toBe('«redacted»');
    const tampered = await post('/webhooks/payments', body.replace('paid', 'void'), {
      'Content-Type': 'application/json',
      'Stripe-Signature': signature,
    });
    expect(tampered.status).toBe(401);
  });

  it('chat: X-Slack-Signature and X-Slack-Request-Timestamp, the handshake included', async () => {
    const slack = (body: string, ts = Math.floor(Date.now() / 1000)) => ({
      'Content-Type': 'application/json',
      'X-Slack-Request-Timestamp': String(ts),
      'X-Slack-Signature': `v0=${hex(SECRETS.chat, `v0:${ts}:`, body)}`,
    });
    const body = JSON.stringify({
      type: 'event_callback',
      event_id: `Ev${randomUUID()}`,
      event: { type: 'message' },
    });
    const res = await post('/webhooks/chat', body, slack(body));
    expect(res.status).toBe(202);
    const stored = await detail(res.json().id);
    expect(stored).toMatchObject({ event_type: 'message', verify_detail: 'v0 signature verified' });
    expect(stored!.headers['x-slack-signature']).toBe('«redacted»');

    const { 'X-Slack-Request-Timestamp': _ts, ...noTimestamp } = slack(body);
    expect((await post('/webhooks/chat', body, noTimestamp)).status).toBe(400);
    const stale = slack(body, Math.floor(Date.now() / 1000) - 301);
    expect((await post('/webhooks/chat', body, stale)).status).toBe(401);

    const handshake = JSON.stringify({ type: 'url_verification', challenge: 'slack-challenge' });
    const hello = await post('/webhooks/chat', handshake, slack(handshake));
    expect(hello.status).toBe(200);
    expect(hello.json()).toEqual({ challenge: 'slack-challenge' });
  });
});

describe('redeliveries over HTTP, embedded', () => {
  it('stores 20 simultaneous copies of one delivery once, answering all 202 with the original id', async () => {
    const body = JSON.stringify({ storm: 'embedded' });
    const headers = await codehostHeaders(body, { 'x-github-delivery': randomUUID() });
    const before = await h.deliveries();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${base}/webhooks/codehost`, { method: 'POST', body, headers }).then(async (r) => ({
          status: r.status,
          ack: (await r.json()) as { id: number },
        })),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(202));
    expect(new Set(answers.map((a) => a.ack.id))).toEqual(new Set([before + 1]));
    expect(await h.deliveries()).toBe(before + 1);
  });
});
