import { createHmac, randomUUID } from 'node:crypto';
import { sign as signCodehost } from '@octokit/webhooks-methods';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryDetail } from '../../src/deliveries/read.ts';
import { operator } from '../http/api/client.ts';
import { type Agent, connectAgent, settled, startServer, type TestServer, vend } from './support.ts';

const PROXY_ENV = {
  HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1',
  HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User',
};
const stripe = new Stripe('sk_test_not_used');

type Created = {
  webhook_id: string;
  ingest_url: string;
  scheme: string;
  signing_secret: string | null;
  signature: { scheme: string; required: boolean } | null;
};
type Ack = { id: number; provider: string; trust_mode: string; verified: boolean };
type Problem = { status: number; code: string; detail: string; type: string };

/** The chat platform's v0 scheme, as its documentation writes it: HMAC-SHA256 of `v0:<ts>:<body>`. */
const chatSignature = (secret: string, ts: string, body: string) =>
  `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`;
const nowS = () => String(Math.floor(Date.now() / 1000));

const post = async (url: string, body: string, headers: Record<string, string>) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await res.text();
  return {
    status: res.status,
    contentType: res.headers.get('content-type'),
    body: JSON.parse(text || 'null'),
  };
};

describe('endpoint webhooks verify the senders people have (POST /webhooks/w/<token>)', () => {
  let server: TestServer;
  let agent: Agent;
  beforeAll(async () => {
    server = await startServer({ env: PROXY_ENV });
    agent = await connectAgent(await vend(server));
  });
  afterAll(async () => {
    await agent?.close();
    await server?.close();
  });

  const create = (args: Record<string, unknown>) =>
    agent.ok<Created>('create_webhook', { name: `hook ${randomUUID().slice(0, 8)}`, ...args });

  /** The stored delivery of an event id: the log read model's row, the headers and bytes of its event. */
  const logRow = async (id: number) => {
    await settled(server);
    const detail = await deliveryDetail(server.runtime, id);
    if (!detail) throw new Error(`no delivery ${id} in the log`);
    return detail;
  };
  const storedFor = async (webhookId: string) => {
    await settled(server);
    const rows = await server.runtime.db
      .selectFrom('log_events')
      .select('id')
      .where('provider', '=', `webhook:${webhookId}`)
      .execute();
    return rows.length;
  };

  const todosFor = async (webhookId: string) => {
    await settled(server);
    return server.runtime.db
      .selectFrom('todos')
      .select('id')
      .where('source', '=', `webhook:${webhookId}`)
      .execute();
  };

  it('codehost: signed by @octokit/webhooks-methods; event type and delivery id from the GitHub headers; redelivery idempotent', async () => {
    const hook = await create({ scheme: 'codehost' });
    expect(hook).toMatchObject({ scheme: 'codehost', signature: { scheme: 'codehost', required: true } });
    const secret = hook.signing_secret!;
    const body = JSON.stringify({ ref: 'refs/heads/main', repository: { full_name: 'acme/api' } });
    const delivery = randomUUID();
    const headers = {
      'x-hub-signature-256': await signCodehost(secret, body),
      'x-github-event': 'push',
      'x-github-delivery': delivery,
    };
    const first = await post(hook.ingest_url, body, headers);
    expect(first.status).toBe(202);
    expect(first.body as Ack).toMatchObject({ verified: true, trust_mode: 'token' });
    const again = await post(hook.ingest_url, body, headers);
    expect(again.status).toBe(202);
    expect((again.body as Ack).id).toBe((first.body as Ack).id);
    const row = await logRow((first.body as Ack).id);
    expect(row).toMatchObject({ event_type: 'push', external_id: delivery, verified: true });
    expect(row.verify_detail).toMatch(/sha256/);
    expect(row.headers['x-hub-signature-256']).toBe('«redacted»');
    // The counts the property tests below rely on see what a genuine delivery stores.
    expect(await storedFor(hook.webhook_id)).toBe(1);
    expect(await todosFor(hook.webhook_id)).toHaveLength(1);

    const wrong = await post(hook.ingest_url, body, {
      ...headers,
      'x-hub-signature-256': await signCodehost('not the secret', body),
    });
    expect(wrong.status).toBe(401);
    expect(wrong.contentType).toMatch(/json/);
    expect(wrong.body as Problem).toMatchObject({ status: 401, code: 'invalid_signature' });
    // The standard scheme's headers do not pass a codehost webhook.
    const std = new Webhook(`whsec_${Buffer.from('x'.repeat(32)).toString('base64')}`);
    const other = await post(hook.ingest_url, body, {
      'webhook-id': 'msg_1',
      'webhook-timestamp': nowS(),
      'webhook-signature': std.sign('msg_1', new Date(), body),
    });
    expect(other.status).toBe(401);
  });

  it('payments: a secret supplied by the caller, signed by the stripe package, fresh t= only; type and id from the event', async () => {
    const secret = `whsec_test_${randomUUID().replaceAll('-', '')}`;
    const hook = await create({ scheme: 'payments', secret });
    expect(hook.signing_secret).toBe(secret);
    const event = { id: `evt_${randomUUID().slice(0, 12)}`, type: 'invoice.paid', data: { object: {} } };
    const body = JSON.stringify(event);
    const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret });
    const ok = await post(hook.ingest_url, body, { 'stripe-signature': header });
    expect(ok.status).toBe(202);
    const again = await post(hook.ingest_url, body, {
      'payments-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret }),
    });
    expect((again.body as Ack).id).toBe((ok.body as Ack).id);
    expect(await logRow((ok.body as Ack).id)).toMatchObject({
      event_type: 'invoice.paid',
      external_id: event.id,
      verified: true,
    });
    const stale = stripe.webhooks.generateTestHeaderString({
      payload: body,
      secret,
      timestamp: Math.floor(Date.now() / 1000) - 3600,
    });
    const refused = await post(hook.ingest_url, body, { 'stripe-signature': stale });
    expect(refused.status).toBe(401);
    expect((refused.body as Problem).detail).toMatch(/window/);
  });

  it('chat: v0 with the request timestamp; url_verification answered 200 minting nothing; no timestamp is 400', async () => {
    const hook = await create({ scheme: 'chat' });
    const secret = hook.signing_secret!;
    const handshake = JSON.stringify({ type: 'url_verification', challenge: 'c-123', token: 'x' });
    const ts = nowS();
    const answered = await post(hook.ingest_url, handshake, {
      'x-slack-request-timestamp': ts,
      'x-slack-signature': chatSignature(secret, ts, handshake),
    });
    expect(answered.status).toBe(200);
    expect(answered.body).toEqual({ challenge: 'c-123' });
    expect(await storedFor(hook.webhook_id)).toBe(0);
    // Unsigned, the handshake is refused like anything else.
    expect((await post(hook.ingest_url, handshake, { 'x-slack-request-timestamp': ts })).status).toBe(401);

    const body = JSON.stringify({
      type: 'event_callback',
      event_id: 'Ev123',
      event: { type: 'app_mention' },
    });
    const headers = { 'x-slack-request-timestamp': ts, 'x-slack-signature': chatSignature(secret, ts, body) };
    const ok = await post(hook.ingest_url, body, headers);
    expect(ok.status).toBe(202);
    expect(await logRow((ok.body as Ack).id)).toMatchObject({
      event_type: 'app_mention',
      external_id: 'Ev123',
      verified: true,
    });
    const missing = await post(hook.ingest_url, body, { 'x-slack-signature': headers['x-slack-signature'] });
    expect(missing.status).toBe(400);
    expect((missing.body as Problem).code).toBe('missing_header');
    const old = String(Number(ts) - 3600);
    const stale = await post(hook.ingest_url, body, {
      'x-slack-request-timestamp': old,
      'x-slack-signature': chatSignature(secret, old, body),
    });
    expect(stale.status).toBe(401);
  });

  it('chat: a redelivery of the same event_id, signed afresh, is the same delivery and one todo', async () => {
    const hook = await create({ scheme: 'chat' });
    const secret = hook.signing_secret!;
    const eventId = `Ev${randomUUID().slice(0, 8).toUpperCase()}`;
    const body = JSON.stringify({ type: 'event_callback', event_id: eventId, event: { type: 'message' } });
    const earlier = String(Number(nowS()) - 5);
    const first = await post(hook.ingest_url, body, {
      'x-slack-request-timestamp': earlier,
      'x-slack-signature': chatSignature(secret, earlier, body),
    });
    expect(first.status).toBe(202);
    // The platform retries with a new timestamp (so a new signature) and says which retry it is.
    const ts = nowS();
    const retry = await post(hook.ingest_url, body, {
      'x-slack-request-timestamp': ts,
      'x-slack-signature': chatSignature(secret, ts, body),
      'x-slack-retry-num': '1',
      'x-slack-retry-reason': 'http_timeout',
    });
    expect(retry.status).toBe(202);
    expect((retry.body as Ack).id).toBe((first.body as Ack).id);
    expect(await logRow((first.body as Ack).id)).toMatchObject({
      external_id: eventId,
      event_type: 'message',
    });
    expect(await storedFor(hook.webhook_id)).toBe(1);
    expect(await todosFor(hook.webhook_id)).toHaveLength(1);
  });

  it('rotate_webhook_secret to a secret the caller supplies: it is the one returned, and both verify meanwhile', async () => {
    const first = `whsec_first_${randomUUID().replaceAll('-', '')}`;
    const hook = await create({ scheme: 'payments', secret: first });
    const next = `whsec_next_${randomUUID().replaceAll('-', '')}`;
    const rotated = await agent.ok<{ signing_secret: string; previous_expires_at: string; scheme: string }>(
      'rotate_webhook_secret',
      { webhook_id: hook.webhook_id, secret: next },
    );
    expect(rotated).toMatchObject({ signing_secret: next, scheme: 'payments' });
    const overlap = Date.parse(rotated.previous_expires_at) - Date.now();
    expect(overlap).toBeGreaterThan(23 * 3600_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3600_000);

    const send = async (secret: string) => {
      const body = JSON.stringify({ id: `evt_${randomUUID().slice(0, 12)}`, type: 'invoice.paid' });
      const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret });
      return (await post(hook.ingest_url, body, { 'stripe-signature': header })).status;
    };
    expect(await send(next)).toBe(202);
    expect(await send(first)).toBe(202);
    expect(await send(`whsec_other_${randomUUID().replaceAll('-', '')}`)).toBe(401);
    expect(await storedFor(hook.webhook_id)).toBe(2);

    // A supplied secret is held to the scheme's form; a refused rotation changes nothing.
    expect(
      await agent.refused('rotate_webhook_secret', { webhook_id: hook.webhook_id, secret: 'short' }),
    ).toBe('bad_request');
    expect(await send(next)).toBe(202);
    expect(await send(first)).toBe(202);

    await agent.ok('rotate_webhook_secret', { webhook_id: hook.webhook_id, retire_previous: true });
    expect(await send(first)).toBe(401);
    expect(await send(next)).toBe(202);
  });

  it('none: no secret, the URL is the credential (trust mode token, unverified)', async () => {
    const hook = await create({ scheme: 'none' });
    expect(hook).toMatchObject({ scheme: 'none', signing_secret: null, signature: null });
    const res = await post(hook.ingest_url, '{"type":"ping"}', {});
    expect(res.status).toBe(202);
    expect(res.body as Ack).toMatchObject({ trust_mode: 'token', verified: false });
    expect(await agent.refused('rotate_webhook_secret', { webhook_id: hook.webhook_id })).toBe('bad_request');
    expect(await agent.refused('create_webhook', { name: 'x', scheme: 'none', secret: 'a'.repeat(20) })).toBe(
      'bad_request',
    );
    expect(
      await agent.refused('create_webhook', { name: 'x', scheme: 'codehost', require_signature: false }),
    ).toBe('bad_request');
    expect(await agent.refused('create_webhook', { name: 'x', scheme: 'payments', secret: 'short' })).toBe(
      'bad_request',
    );
  });

  it('rotate_webhook_secret: old and new both verify until the old one is retired; another endpoint hears not_found', async () => {
    const hook = await create({ scheme: 'codehost' });
    const old = hook.signing_secret!;
    const body = '{"zen":"rotate"}';
    const send = async (secret: string) =>
      (
        await post(hook.ingest_url, body, {
          'x-hub-signature-256': await signCodehost(secret, body),
          'x-github-event': 'ping',
        })
      ).status;
    const rotated = await agent.ok<{ signing_secret: string; previous_expires_at: string }>(
      'rotate_webhook_secret',
      { webhook_id: hook.webhook_id },
    );
    const overlap = Date.parse(rotated.previous_expires_at) - Date.now();
    expect(overlap).toBeGreaterThan(23 * 3600_000);
    expect(overlap).toBeLessThanOrEqual(24 * 3600_000);
    expect(await send(rotated.signing_secret)).toBe(202);
    expect(await send(old)).toBe(202);
    const listed = await agent.ok<{
      webhooks: { webhook_id: string; signature: { previous_expires_at: string } }[];
    }>('list_webhooks');
    expect(listed.webhooks.find((w) => w.webhook_id === hook.webhook_id)?.signature.previous_expires_at).toBe(
      rotated.previous_expires_at,
    );

    const stranger = await connectAgent(await vend(server));
    try {
      expect(await stranger.refused('rotate_webhook_secret', { webhook_id: hook.webhook_id })).toBe(
        'not_found',
      );
    } finally {
      await stranger.close();
    }

    await agent.ok('rotate_webhook_secret', { webhook_id: hook.webhook_id, retire_previous: true });
    expect(await send(old)).toBe(401);
    expect(await send(rotated.signing_secret)).toBe(202);

    // No overlap: the previous secret stops at once.
    const third = await agent.ok<{ signing_secret: string; previous_expires_at: null }>(
      'rotate_webhook_secret',
      {
        webhook_id: hook.webhook_id,
        previous_valid_seconds: 0,
      },
    );
    expect(third.previous_expires_at).toBeNull();
    expect(await send(rotated.signing_secret)).toBe(401);
    expect(await send(third.signing_secret)).toBe(202);
  });

  it('a vend takes webhook_scheme: its own webhook checks the code host signature with the secret shown once', async () => {
    const alice = await operator(server.url, 'alice');
    const res = await alice.call<{ webhook: { ingest_url: string; scheme: string; signing_secret: string } }>(
      'POST',
      '/endpoints',
      { name: 'GitHub Bot', webhook_scheme: 'codehost' },
    );
    expect(res.status, res.text).toBe(201);
    const { webhook } = res.body;
    expect(webhook.scheme).toBe('codehost');
    const body = '{"action":"opened"}';
    const signed = await post(webhook.ingest_url, body, {
      'x-hub-signature-256': await signCodehost(webhook.signing_secret, body),
      'x-github-event': 'pull_request',
    });
    expect(signed.status).toBe(202);
    expect((await post(webhook.ingest_url, body, { 'x-github-event': 'pull_request' })).status).toBe(401);
    const plain = await alice.call<{ webhook: { scheme: string; signing_secret: null } }>(
      'POST',
      '/endpoints',
      {
        name: 'Plain Bot',
      },
    );
    expect(plain.body.webhook).toMatchObject({ scheme: 'none', signing_secret: null });
    for (const body of [
      { name: 'x', webhook_scheme: 'github' },
      { name: 'x', webhook_secret: 'a'.repeat(20) },
      { name: 'x', webhook_scheme: 'standard', webhook_secret: 'not-a-whsec-secret' },
    ]) {
      expect((await alice.call('POST', '/endpoints', body)).status, JSON.stringify(body)).toBe(400);
    }
  });

  describe('property: no malformed signature input yields anything but 400/401, and nothing is stored', () => {
    const body = JSON.stringify({ type: 'ping', id: 'evt_1', event_id: 'Ev1', event: { type: 'x' } });
    const printable = fc.stringMatching(/^[!-~]{0,90}$/);
    const hex64 = fc.stringMatching(/^[0-9a-f]{64}$/);
    const flip = (s: string, i: number) => {
      const at = i % s.length;
      const c = s[at] === '0' ? '1' : '0';
      return s.slice(0, at) + c + s.slice(at + 1);
    };

    /** Header sets built from noise, near misses of a genuine signature and signatures of other bytes. */
    const headerSets: Record<string, (secret: string) => fc.Arbitrary<Record<string, string>>> = {
      codehost: (secret) =>
        fc.oneof(
          printable.map((v) => ({ 'x-hub-signature-256': v })),
          hex64.map((h) => ({ 'x-hub-signature-256': `sha256=${h}` })),
          fc.nat().map((i) => {
            const good = createHmac('sha256', secret).update(body).digest('hex');
            return { 'x-hub-signature-256': `sha256=${flip(good, i)}` };
          }),
          printable.map((other) => ({
            'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(`${body}${other} `).digest('hex')}`,
          })),
          fc.constant({}),
        ),
      payments: (secret) =>
        fc.oneof(
          printable.map((v) => ({ 'stripe-signature': v })),
          fc.tuple(fc.integer({ min: 0, max: 4_000_000_000 }), hex64).map(([t, h]) => ({
            'payments-signature': `t=${t},v1=${h}`,
          })),
          fc.nat().map((i) => {
            const t = nowS();
            const good = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
            return { 'stripe-signature': `t=${t},v1=${flip(good, i)}` };
          }),
          fc.integer({ min: 400, max: 100_000 }).map((age) => ({
            'stripe-signature': stripe.webhooks.generateTestHeaderString({
              payload: body,
              secret,
              timestamp: Math.floor(Date.now() / 1000) - age,
            }),
          })),
        ),
      chat: (secret) =>
        fc.oneof(
          fc.tuple(printable, printable).map(([ts, v]) => ({
            'x-slack-request-timestamp': ts,
            'x-slack-signature': v,
          })),
          printable.map((v) => ({ 'x-slack-signature': v })),
          fc.nat().map((i) => {
            const ts = nowS();
            return {
              'x-slack-request-timestamp': ts,
              'x-slack-signature': flip(chatSignature(secret, ts, body), i + 3),
            };
          }),
          fc.integer({ min: 400, max: 100_000 }).map((age) => {
            const ts = String(Math.floor(Date.now() / 1000) - age);
            return { 'x-slack-request-timestamp': ts, 'x-slack-signature': chatSignature(secret, ts, body) };
          }),
        ),
      standard: (secret) =>
        fc.oneof(
          fc.tuple(printable, printable, printable).map(([id, ts, sig]) => ({
            'webhook-id': id || 'm',
            'webhook-timestamp': ts,
            'webhook-signature': sig,
          })),
          fc.nat().map((i) => {
            const at = new Date();
            const good = new Webhook(secret).sign('msg_p', at, body);
            return {
              'webhook-id': 'msg_p',
              'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
              'webhook-signature': `v1,${flip(good.slice(3), i)}`,
            };
          }),
          fc.constant({}),
        ),
    };

    for (const scheme of ['codehost', 'payments', 'chat', 'standard'] as const) {
      it(`${scheme}: 400 or 401 with a problem document, and no delivery or todo`, async () => {
        const hook = await create({ scheme });
        const secret = hook.signing_secret!;
        await fc.assert(
          fc.asyncProperty(headerSets[scheme]!(secret), async (headers) => {
            const res = await post(hook.ingest_url, body, headers);
            expect([400, 401]).toContain(res.status);
            expect(res.body as Problem).toMatchObject({ status: res.status, type: expect.any(String) });
          }),
          { numRuns: 40 },
        );
        expect(await storedFor(hook.webhook_id)).toBe(0);
        expect(await todosFor(hook.webhook_id)).toEqual([]);
      });
    }
  });
});
