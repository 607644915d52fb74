import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { parseData } from '../eventstore/codec.ts';
import { type EventStore, StreamNotFoundError } from '../eventstore/port.ts';

/**
 * The signing side of an endpoint-owned webhook (release 0.3.0): its own secret in the Standard
 * Webhooks scheme. Recorded on the webhook's stream as an event of its own, the secret sealed
 * (src/mcp/secret-box.ts); the webhook aggregate of src/domain/webhook skips this type, and this
 * module folds only this type.
 */
export const WEBHOOK_SIGNING_SET = 'WebhookSigningSecretSet';

export interface WebhookSigningEvent {
  readonly type: typeof WEBHOOK_SIGNING_SET;
  readonly data: {
    readonly webhook_id: string;
    readonly scheme: 'standard-webhooks';
    /** `whsec_…` sealed with the secret box, bound to the webhook id. */
    readonly secret_sealed: string;
    /** true: a delivery without a valid signature is refused (401); false: unsigned ones pass unverified. */
    readonly required: boolean;
    readonly set_at: string;
  };
}

export interface WebhookSigning {
  readonly scheme: 'standard-webhooks';
  readonly secretSealed: string;
  readonly required: boolean;
}

/** `whsec_` + base64 of 32 random bytes, the Standard Webhooks secret form. */
export const mintSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

export async function loadWebhookSigning(
  store: EventStore,
  webhookId: string,
): Promise<WebhookSigning | null> {
  let signing: WebhookSigning | null = null;
  try {
    for await (const e of store.readStream(`webhook-${webhookId}`)) {
      if (e.type !== WEBHOOK_SIGNING_SET) continue;
      const d = parseData<WebhookSigningEvent['data']>(e);
      signing = { scheme: d.scheme, secretSealed: d.secret_sealed, required: d.required };
    }
  } catch (err) {
    if (!(err instanceof StreamNotFoundError)) throw err;
  }
  return signing;
}

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
