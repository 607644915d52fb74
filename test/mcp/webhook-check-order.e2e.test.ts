import { createHmac } from 'node:crypto';
import http from 'node:http';
import { sign as signCodehost } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Agent, connectAgent, settled, startServer, type TestServer, vend } from './support.ts';

const LIMIT = 4096;
const INSTANCE_SECRETS = {
  codehost: 'check-order-codehost-secret',
  payments: 'whsec_check_order_payments_secret',
  chat: 'check-order-chat-secret',
} as const;
type Scheme = keyof typeof INSTANCE_SECRETS;
const stripe = new Stripe('sk_test_not_used');

/** The chat platform's v0 scheme, as its documentation writes it: HMAC-SHA256 of `v0:<ts>:<body>`. */
const chatSignature = (secret: string, ts: string, body: string) =>
  `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`;
const nowS = () => String(Math.floor(Date.now() / 1000));

/** Each scheme's genuine signature headers over `body`, made by the sender's own code. */
const signed = async (scheme: Scheme, secret: string, body: string): Promise<Record<string, string>> => {
  if (scheme === 'codehost')
    return { 'x-hub-signature-256': await signCodehost(secret, body), 'x-github-event': 'push' };
  if (scheme === 'payments')
    return { 'stripe-signature': stripe.webhooks.generateTestHeaderString({ payload: body, secret }) };
  const ts = nowS();
  return { 'x-slack-request-timestamp': ts, 'x-slack-signature': chatSignature(secret, ts, body) };
};

type Answer = { status: number; code: string | undefined };

const post = async (url: string, body: string, headers: Record<string, string>): Promise<Answer> => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
  const text = await res.text();
  return { status: res.status, code: (JSON.parse(text || '{}') as { code?: string }).code };
};

/** A body sent in chunks without Content-Length, so that only reading it finds it too large. */
const postChunked = (url: string, bytes: number, headers: Record<string, string>) =>
  new Promise<Answer>((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', ...headers },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, code: (JSON.parse(text || '{}') as { code?: string }).code }),
      );
    });
    req.on('error', reject);
    const chunk = 'x'.repeat(1024);
    let sent = 0;
    const pump = () => {
      while (sent < bytes) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });

/**
 * The check order of docs/reference/api.md ("Checks, in order"): 404, 413, 400 for the chat
 * platform's missing timestamp, 401, then the body's 400. An endpoint webhook in a provider's
 * scheme answers each case as that provider's instance receiver does, which is asked the same.
 */
describe('endpoint webhooks check in the instance receivers’ order (codehost, payments, chat)', () => {
  let server: TestServer;
  let agent: Agent;
  /** Per scheme: the instance receiver and an endpoint webhook, each with its URL and secret. */
  const targets = {} as Record<Scheme, { name: string; url: string; secret: string; webhookId?: string }[]>;

  beforeAll(async () => {
    server = await startServer({
      env: {
        HOOKLINE_MAX_BODY_BYTES: String(LIMIT),
        HOOKLINE_CODEHOST_SECRET: INSTANCE_SECRETS.codehost,
        HOOKLINE_PAYMENTS_SECRET: INSTANCE_SECRETS.payments,
        HOOKLINE_CHAT_SECRET: INSTANCE_SECRETS.chat,
      },
    });
    agent = await connectAgent(await vend(server));
    for (const scheme of Object.keys(INSTANCE_SECRETS) as Scheme[]) {
      const hook = await agent.ok<{ webhook_id: string; ingest_url: string; signing_secret: string }>(
        'create_webhook',
        { name: `order ${scheme}`, scheme },
      );
      targets[scheme] = [
        {
          name: `/webhooks/${scheme}`,
          url: `${server.url}/webhooks/${scheme}`,
          secret: INSTANCE_SECRETS[scheme],
        },
        {
          name: 'endpoint webhook',
          url: hook.ingest_url,
          secret: hook.signing_secret,
          webhookId: hook.webhook_id,
        },
      ];
    }
  });
  afterAll(async () => {
    await agent?.close();
    await server?.close();
  });

  const big = JSON.stringify({ pad: 'x'.repeat(LIMIT) });
  const broken = '{"type": "push",';

  for (const scheme of ['codehost', 'payments', 'chat'] as const) {
    it(`${scheme}: 413 before the signature, 401 before the body, 400 for the body only once signed`, async () => {
      // The chat platform's timestamp rides along where the case is not about it.
      const stamp: Record<string, string> = scheme === 'chat' ? { 'x-slack-request-timestamp': nowS() } : {};
      for (const t of targets[scheme]) {
        const say = (what: string) => `${scheme} ${t.name}: ${what}`;
        // 413 from Content-Length: unsigned, without the chat timestamp, and the body unread.
        expect(await post(t.url, big, {}), say('over the limit')).toEqual({
          status: 413,
          code: 'payload_too_large',
        });
        // 413 while reading, when no Content-Length tells the size beforehand.
        expect(await postChunked(t.url, LIMIT + 1024, stamp), say('over the limit, chunked')).toEqual({
          status: 413,
          code: 'payload_too_large',
        });
        // 401: no signature on a body that is not even JSON.
        expect(await post(t.url, broken, stamp), say('bad body, no signature')).toEqual({
          status: 401,
          code: 'invalid_signature',
        });
        // 401: a signature made with another secret, on a bad body and a wrong content type.
        const forged = await signed(scheme, 'not the secret', broken);
        expect(
          await post(t.url, broken, { ...forged, 'content-type': 'text/plain' }),
          say('bad body, wrong signature'),
        ).toEqual({ status: 401, code: 'invalid_signature' });
        // 400 for the body, only once the signature holds.
        expect(
          await post(t.url, broken, await signed(scheme, t.secret, broken)),
          say('signed bad body'),
        ).toEqual({ status: 400, code: 'invalid_body' });
        const body = JSON.stringify({ type: 'ping' });
        expect(
          await post(t.url, body, {
            ...(await signed(scheme, t.secret, body)),
            'content-type': 'text/plain',
          }),
          say('signed, wrong content type'),
        ).toEqual({ status: 400, code: 'unsupported_content_type' });
        if (scheme === 'chat') {
          // 400 for the missing timestamp comes before the signature and the body.
          expect(await post(t.url, broken, {}), say('no timestamp, no signature, bad body')).toEqual({
            status: 400,
            code: 'missing_header',
          });
          const { 'x-slack-signature': signature } = await signed(scheme, t.secret, body);
          expect(await post(t.url, body, { 'x-slack-signature': signature! }), say('no timestamp')).toEqual({
            status: 400,
            code: 'missing_header',
          });
        }
      }
      // Nothing refused was stored.
      await settled(server);
      const stored = await server.runtime.db
        .selectFrom('log_events')
        .select('id')
        .where('provider', 'in', [scheme, `webhook:${targets[scheme][1]!.webhookId}`])
        .execute();
      expect(stored).toEqual([]);
    });
  }

  it('an unknown ingest URL is 404 before the size', async () => {
    expect(await post(`${server.url}/webhooks/w/${'A'.repeat(43)}`, big, {})).toEqual({
      status: 404,
      code: 'not_found',
    });
  });
});
