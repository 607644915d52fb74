import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { SigningScheme } from '../domain/webhook/events.ts';
import { HooklineError } from '../errors.ts';

/**
 * The signing side of an endpoint-owned webhook (release 0.3.0): its own secret, recorded sealed
 * on the webhook's stream (WebhookSigningSecretSet, src/domain/webhook), in the Standard Webhooks
 * scheme or in the scheme of the sender it is pointed at (checked by src/ingest/signatures).
 */

/**
 * A new secret in the form the scheme's senders expect: `whsec_` + base64 of 32 random bytes
 * (Standard Webhooks; the payment provider's secrets look the same), else 32 random bytes as
 * base64url (a code host or chat platform takes any string).
 */
export function mintSigningSecret(scheme: SigningScheme = 'standard-webhooks'): string {
  const bytes = randomBytes(32);
  if (scheme === 'standard-webhooks') return `whsec_${bytes.toString('base64')}`;
  if (scheme === 'payments') return `whsec_${bytes.toString('base64url')}`;
  return bytes.toString('base64url');
}

const PRINTABLE = /^[\x21-\x7e]+$/;
const MIN_SECRET = 16;
const MAX_SECRET = 512;

/**
 * A secret the caller supplies (payment providers generate theirs for you to paste): 16 to 512
 * printable ASCII characters without spaces; for Standard Webhooks, `whsec_` + base64 of at least
 * 16 bytes, the only form its senders sign with.
 */
export function checkSuppliedSecret(scheme: SigningScheme, secret: string): void {
  const refuse = (why: string) => {
    throw new HooklineError('bad_request', `secret ${why}`, { field: 'secret' });
  };
  if (secret.length < MIN_SECRET || secret.length > MAX_SECRET) {
    refuse(`must be ${MIN_SECRET} to ${MAX_SECRET} characters`);
  }
  if (!PRINTABLE.test(secret)) refuse('must be printable ASCII without spaces');
  if (scheme === 'standard-webhooks') {
    const body = secret.replace(/^whsec_/, '');
    if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret) || Buffer.from(body, 'base64').length < 16) {
      refuse('for the standard scheme must be whsec_ followed by base64 of at least 16 bytes');
    }
  }
}

export type SignatureCheck =
  | { readonly ok: true; readonly verified: boolean; readonly detail: string }
  | { readonly ok: false; readonly reason: string };

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/**
 * Standard Webhooks: `webhook-signature` holds space-separated `v1,<base64 HMAC-SHA256>` entries
 * (several during a rotation) over `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the
 * base64 part of the secret; the timestamp must be within the tolerance either way. Any of
 * `secrets` (the current one, and the previous during a rotation) verifies.
 */
export function checkStandardWebhook(options: {
  readonly headers: IncomingHttpHeaders;
  readonly body: Uint8Array;
  readonly secrets: readonly string[];
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
  const expected = options.secrets.map((secret) => {
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(options.body).digest();
  });
  let matched = -1;
  for (const entry of signature.split(' ')) {
    const [version, value] = entry.split(',', 2);
    if (version !== 'v1' || !value) continue;
    const presented = Buffer.from(value, 'base64');
    expected.forEach((digest, i) => {
      if (presented.length === digest.length && timingSafeEqual(presented, digest) && matched < 0)
        matched = i;
    });
  }
  if (matched < 0) return { ok: false, reason: 'no v1 signature matches' };
  return {
    ok: true,
    verified: true,
    detail:
      expected.length > 1
        ? `standard-webhooks v1 (secret ${matched + 1} of ${expected.length})`
        : 'standard-webhooks v1',
  };
}
