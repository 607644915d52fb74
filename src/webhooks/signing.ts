import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * The signing side of an endpoint-owned webhook (release 0.3.0): its own secret in the Standard
 * Webhooks scheme, recorded sealed on the webhook's stream (WebhookSigningSecretSet, src/domain/webhook).
 */

/** `whsec_` + base64 of 32 random bytes, the Standard Webhooks secret form. */
export const mintSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

export type SignatureCheck =
  | { readonly ok: true; readonly verified: boolean; readonly detail: string }
  | { readonly ok: false; readonly reason: string };

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/**
 * Standard Webhooks: `webhook-signature` holds space-separated `v1,<base64 HMAC-SHA256>` entries
 * (several during a rotation) over `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the
 * base64 part of the secret; the timestamp must be within the tolerance either way.
 */
export function checkStandardWebhook(options: {
  readonly headers: IncomingHttpHeaders;
  readonly body: Uint8Array;
  readonly secret: string;
  readonly required: boolean;
  readonly nowMs: number;
  readonly toleranceS: number;
}): SignatureCheck {
  const id = one(options.headers['webhook-id']);
  const timestamp = one(options.headers['webhook-timestamp']);
  const signature = one(options.headers['webhook-signature']);
  if (id === undefined && timestamp === undefined && signature === undefined && !options.required) {
    return { ok: true, verified: false, detail: 'token ok' };
  }
  if (!id || !timestamp || !signature) {
    return { ok: false, reason: 'webhook-id, webhook-timestamp and webhook-signature are required' };
  }
  if (!/^[0-9]{1,12}$/.test(timestamp)) return { ok: false, reason: 'webhook-timestamp is not a Unix time' };
  if (Math.abs(options.nowMs / 1000 - Number(timestamp)) > options.toleranceS) {
    return { ok: false, reason: 'webhook-timestamp is outside the tolerance' };
  }
  const key = Buffer.from(options.secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(options.body).digest();
  for (const entry of signature.split(' ')) {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || !value) continue;
    const presented = Buffer.from(value, 'base64');
    if (presented.length === expected.length && timingSafeEqual(presented, expected)) {
      return { ok: true, verified: true, detail: 'standard-webhooks v1' };
    }
  }
  return { ok: false, reason: 'no v1 signature matches' };
}
