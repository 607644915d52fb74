import { verify as verifyCodehost } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { forwardHeaders, newLocalSecret } from '../../src/cli/forward/resign.ts';
import { chatScheme } from '../../src/ingest/signatures/chat.ts';

/**
 * The forwarder's new signatures, checked by the providers' own code where a library exists
 * (octokit, stripe, standardwebhooks) and by hookline's own chat verifier (Slack's v0 scheme).
 */
const body = Buffer.from('{"a": 1,  "é": "\\u00e9"}', 'utf8');
const secret = newLocalSecret();
const nowS = Math.floor(Date.now() / 1000);
const REDACTED = '«redacted»';

describe('forwardHeaders', () => {
  it('signs a code host delivery with X-Hub-Signature-256 and keeps its own headers, not the hop ones', async () => {
    const { headers, scheme } = forwardHeaders({
      provider: 'codehost',
      contentType: 'application/json',
      headers: {
        'x-hub-signature-256': REDACTED,
        'x-codehost-event': 'push',
        host: 'hookline.example',
        'content-length': '999',
        'x-forwarded-for': '10.0.0.1',
        authorization: REDACTED,
      },
      body,
      secret,
      nowS,
    });
    expect(scheme).toBe('codehost');
    expect(await verifyCodehost(secret, body.toString('utf8'), headers['x-hub-signature-256']!)).toBe(true);
    expect(headers).toMatchObject({ 'x-codehost-event': 'push', 'content-type': 'application/json' });
    for (const gone of ['host', 'content-length', 'x-forwarded-for', 'authorization'])
      expect(headers).not.toHaveProperty(gone);
  });

  it('signs a payments delivery in the header name it came with', () => {
    const { headers } = forwardHeaders({
      provider: 'payments',
      contentType: 'application/json',
      headers: { 'stripe-signature': REDACTED },
      body,
      secret,
      nowS,
    });
    expect(() =>
      new Stripe('sk_test_not_used').webhooks.constructEvent(body, headers['stripe-signature']!, secret),
    ).not.toThrow();
  });

  it('signs a chat delivery with a fresh timestamp', () => {
    const { headers } = forwardHeaders({
      provider: 'chat',
      contentType: 'application/json',
      headers: { 'x-chat-signature': REDACTED, 'x-chat-request-timestamp': '1' },
      body,
      secret,
      nowS,
    });
    expect(headers['x-chat-request-timestamp']).toBe(String(nowS));
    const result = chatScheme.verify({
      headers,
      body,
      secrets: [secret],
      nowMs: nowS * 1000,
      toleranceS: 300,
    });
    expect(result.ok).toBe(true);
  });

  it('signs an endpoint webhook in Standard Webhooks, and one verified in a provider scheme in that scheme', async () => {
    const sw = forwardHeaders({
      provider: 'webhook:wh_aaaaaaaaaaaaaaaaaaaa',
      contentType: 'application/json',
      headers: { 'webhook-id': 'msg_1', 'webhook-timestamp': '1', 'webhook-signature': REDACTED },
      body,
      secret,
      nowS,
    });
    expect(sw.scheme).toBe('standard-webhooks');
    expect(() => new Webhook(secret).verify(body.toString('utf8'), sw.headers)).not.toThrow();
    const codehostStyle = forwardHeaders({
      provider: 'webhook:wh_aaaaaaaaaaaaaaaaaaaa',
      contentType: null,
      headers: { 'x-hub-signature-256': REDACTED },
      body,
      secret,
      nowS,
    });
    expect(codehostStyle.scheme).toBe('codehost');
    expect(
      await verifyCodehost(secret, body.toString('utf8'), codehostStyle.headers['x-hub-signature-256']!),
    ).toBe(true);
  });

  it('leaves a delivery without a signature scheme unsigned, its redacted token dropped', () => {
    const { headers, scheme } = forwardHeaders({
      provider: 'generic:ci',
      contentType: 'text/plain',
      headers: { 'x-hookline-token': REDACTED, 'x-build': '7' },
      body,
      secret,
      nowS,
    });
    expect(scheme).toBe('none');
    expect(headers).toEqual({ 'x-build': '7', 'content-type': 'text/plain' });
    // Guard against a signature slipping in anyway.
    expect(Object.keys(headers).some((h) => /signature/.test(h))).toBe(false);
  });
});
