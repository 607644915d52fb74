import { createHmac } from 'node:crypto';
import { sign as octokitSign } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { signatureSchemes } from '../../src/ingest/signatures/index.ts';
import type { VerifyResult } from '../../src/ingest/signatures/types.ts';

const NOW_MS = Date.parse('2025-06-01T12:00:00.000Z');
const NOW_S = Math.floor(NOW_MS / 1000);
const enc = new TextEncoder();
const stripe = new Stripe('sk_test_not_used');

function verify(
  provider: 'codehost' | 'payments' | 'chat',
  headers: Record<string, string>,
  body: string | Uint8Array,
  secrets: string[],
): VerifyResult {
  return signatureSchemes[provider].verify({
    headers,
    body: typeof body === 'string' ? enc.encode(body) : body,
    secrets,
    nowMs: NOW_MS,
    toleranceS: 300,
  });
}

/** Slack's published v0 algorithm: hex HMAC-SHA256 of `v0:<timestamp>:<body>`. */
const slackV0 = (secret: string, ts: number | string, body: string) =>
  `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`;

const stripeHeader = (payload: string, secret: string, timestamp = NOW_S) =>
  stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp });

const body = JSON.stringify({ action: 'opened', number: 7, title: 'Fix the thing' });
const reformatted = JSON.stringify(JSON.parse(body), null, 2);
const unicode = JSON.stringify({ text: 'héllo wörld ✓ 日本語 🚀', emoji: '\u{1F600}' });

describe('codehost (X-Hub-Signature-256)', () => {
  it("verifies GitHub's published test vector", () => {
    const r = verify(
      'codehost',
      { 'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17' },
      'Hello, World!',
      ["It's a Secret to Everybody"],
    );
    expect(r).toEqual({ ok: true, detail: 'sha256 signature verified' });
  });

  it('accepts what @octokit/webhooks-methods signs, including a unicode body', async () => {
    for (const payload of [body, unicode]) {
      const sig = await octokitSign('s3cret', payload);
      expect(verify('codehost', { 'x-hub-signature-256': sig }, payload, ['s3cret']).ok).toBe(true);
    }
  });

  it('refuses one changed byte, a reformatted body and a wrong secret', async () => {
    const sig = await octokitSign('s3cret', body);
    const flipped = enc.encode(body);
    flipped[10] = flipped[10]! ^ 0x01;
    expect(verify('codehost', { 'x-hub-signature-256': sig }, flipped, ['s3cret'])).toMatchObject({
      ok: false,
      code: 'invalid_signature',
    });
    expect(verify('codehost', { 'x-hub-signature-256': sig }, reformatted, ['s3cret']).ok).toBe(false);
    expect(verify('codehost', { 'x-hub-signature-256': sig }, body, ['other']).ok).toBe(false);
  });

  it('verifies with a secret configured with a trailing newline (trimmed by the config)', async () => {
    const config = loadConfig({ HOOKLINE_CODEHOST_SECRET: 's3cret\n' });
    const sig = await octokitSign('s3cret', body);
    expect(verify('codehost', { 'x-hub-signature-256': sig }, body, [...config.secrets.codehost]).ok).toBe(
      true,
    );
    expect(verify('codehost', { 'x-hub-signature-256': sig }, body, ['s3cret\n']).ok).toBe(false);
  });

  it('accepts any secret of a rotation list and says which matched', async () => {
    const config = loadConfig({ HOOKLINE_CODEHOST_SECRET: 'old, new' });
    const sig = await octokitSign('new', body);
    expect(verify('codehost', { 'x-hub-signature-256': sig }, body, [...config.secrets.codehost])).toEqual({
      ok: true,
      detail: 'sha256 signature verified (secret 2 of 2)',
    });
  });

  it('refuses a missing or malformed header as a signature failure', () => {
    expect(verify('codehost', {}, body, ['s']).ok).toBe(false);
    expect(verify('codehost', { 'x-hub-signature-256': 'sha1=abc' }, body, ['s'])).toMatchObject({
      ok: false,
      code: 'invalid_signature',
    });
    expect(verify('codehost', { 'x-hub-signature-256': `sha256=${'z'.repeat(64)}` }, body, ['s']).ok).toBe(
      false,
    );
  });
});

describe('payments (Payments-Signature / Stripe-Signature)', () => {
  it("accepts the stripe package's test header under both header names, with a unicode body", () => {
    for (const payload of [body, unicode]) {
      const header = stripeHeader(payload, 'whsec_test');
      expect(verify('payments', { 'payments-signature': header }, payload, ['whsec_test'])).toEqual({
        ok: true,
        detail: 'v1 signature verified',
      });
      expect(verify('payments', { 'stripe-signature': header }, payload, ['whsec_test']).ok).toBe(true);
    }
  });

  it('refuses one changed byte, a reformatted body and a wrong secret', () => {
    const header = stripeHeader(body, 'whsec_test');
    expect(
      verify('payments', { 'payments-signature': header }, body.replace('7', '8'), ['whsec_test']).ok,
    ).toBe(false);
    expect(verify('payments', { 'payments-signature': header }, reformatted, ['whsec_test']).ok).toBe(false);
    expect(verify('payments', { 'payments-signature': header }, body, ['whsec_other']).ok).toBe(false);
  });

  it('refuses a timestamp 301 s old or 301 s ahead, and accepts 299 s either way', () => {
    for (const [offset, ok] of [
      [-301, false],
      [301, false],
      [-299, true],
      [299, true],
    ] as const) {
      const header = stripeHeader(body, 'whsec_test', NOW_S + offset);
      const r = verify('payments', { 'payments-signature': header }, body, ['whsec_test']);
      expect(r.ok, `offset ${offset}`).toBe(ok);
    }
  });

  it('refuses a timestamp in milliseconds, saying so', () => {
    const t = String(NOW_MS);
    const v1 = createHmac('sha256', 'whsec_test').update(`${t}.${body}`).digest('hex');
    const r = verify('payments', { 'payments-signature': `t=${t},v1=${v1}` }, body, ['whsec_test']);
    expect(r).toEqual({
      ok: false,
      code: 'invalid_signature',
      reason: 'timestamp must be in seconds, not milliseconds',
    });
  });

  it('verifies with a secret configured with a trailing newline (trimmed by the config)', () => {
    const config = loadConfig({ HOOKLINE_PAYMENTS_SECRET: 'whsec_test\n' });
    const header = { 'payments-signature': stripeHeader(body, 'whsec_test') };
    expect(verify('payments', header, body, [...config.secrets.payments]).ok).toBe(true);
    expect(verify('payments', header, body, ['whsec_test\n']).ok).toBe(false); // the trim is what makes it pass
  });

  it('accepts several v1 of which only the second is valid', () => {
    const good = stripeHeader(body, 'whsec_test');
    const v1 = /v1=([0-9a-f]{64})/.exec(good)![1]!;
    const bad = createHmac('sha256', 'whsec_wrong').update(`${NOW_S}.${body}`).digest('hex');
    const header = `t=${NOW_S},v1=${bad},v1=${v1}`;
    expect(verify('payments', { 'payments-signature': header }, body, ['whsec_test']).ok).toBe(true);
    expect(
      verify('payments', { 'payments-signature': `t=${NOW_S},v1=${bad}` }, body, ['whsec_test']).ok,
    ).toBe(false);
  });
});

describe('chat (X-Chat-Signature, v0)', () => {
  const ts = String(NOW_S);
  it('accepts the v0 signature under the neutral and the real header names, with a unicode body', () => {
    for (const payload of [body, unicode]) {
      const sig = slackV0('chat-secret', ts, payload);
      expect(
        verify('chat', { 'x-chat-signature': sig, 'x-chat-request-timestamp': ts }, payload, ['chat-secret']),
      ).toEqual({ ok: true, detail: 'v0 signature verified' });
      expect(
        verify('chat', { 'x-slack-signature': sig, 'x-slack-request-timestamp': ts }, payload, [
          'chat-secret',
        ]).ok,
      ).toBe(true);
    }
  });

  it('verifies with a secret configured with a trailing newline (trimmed by the config)', () => {
    const config = loadConfig({ HOOKLINE_CHAT_SECRET: 'chat-secret\n' });
    const headers = { 'x-chat-signature': slackV0('chat-secret', ts, body), 'x-chat-request-timestamp': ts };
    expect(verify('chat', headers, body, [...config.secrets.chat]).ok).toBe(true);
    expect(verify('chat', headers, body, ['chat-secret\n']).ok).toBe(false); // the trim is what makes it pass
  });

  it('answers 400 (missing header) without a timestamp header, before looking at the signature', () => {
    const r = verify('chat', { 'x-chat-signature': slackV0('chat-secret', ts, body) }, body, ['chat-secret']);
    expect(r).toMatchObject({ ok: false, code: 'missing_header' });
    expect(verify('chat', {}, body, ['chat-secret'])).toMatchObject({ ok: false, code: 'missing_header' });
  });

  it('refuses one changed byte, a reformatted body, a wrong secret, stale or future or millisecond timestamps', () => {
    const h = (t: string, b = body, secret = 'chat-secret') => ({
      'x-chat-signature': slackV0(secret, t, b),
      'x-chat-request-timestamp': t,
    });
    expect(verify('chat', h(ts), `${body.slice(0, -1)} }`, ['chat-secret']).ok).toBe(false);
    expect(verify('chat', h(ts), reformatted, ['chat-secret']).ok).toBe(false);
    expect(verify('chat', h(ts, body, 'nope'), body, ['chat-secret']).ok).toBe(false);
    expect(verify('chat', h(String(NOW_S - 301)), body, ['chat-secret']).ok).toBe(false);
    expect(verify('chat', h(String(NOW_S + 301)), body, ['chat-secret']).ok).toBe(false);
    expect(verify('chat', h(String(NOW_MS)), body, ['chat-secret'])).toMatchObject({
      ok: false,
      code: 'invalid_signature',
      reason: 'timestamp must be in seconds, not milliseconds',
    });
  });
});
