import { createHmac, randomBytes } from 'node:crypto';

/**
 * How `hookline forward` re-signs a delivery for the local app: in the provider's own scheme,
 * with a secret of its own, so the app's unchanged verification code accepts the copy. The stored
 * headers carry no signatures (they are redacted when recorded), so every signature here is new.
 */

/** What the forward marks as a redacted header value (src/ingest/sanitize.ts). */
const REDACTED = '«redacted»';

/** Headers that describe the original hop, not the delivery: the new request sets its own. */
const HOP_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'accept-encoding',
  'forwarded',
  'x-real-ip',
  'proxy-authorization',
  'proxy-connection',
]);

export type Scheme = 'codehost' | 'payments' | 'chat' | 'standard-webhooks' | 'none';

/**
 * A fresh local secret, `whsec_` and 24 random bytes in base64: the Standard Webhooks libraries
 * take the base64 part as the key, the payments provider's and the HMAC schemes take the whole
 * string, so one secret serves every scheme.
 */
export const newLocalSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

const hmacHex = (key: string | Buffer, ...parts: (string | Buffer)[]): string => {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return h.digest('hex');
};

/**
 * The scheme a delivery was signed in: its provider's, else the one whose signature header it
 * arrived with (an endpoint webhook may verify a provider's scheme; the header stays, redacted).
 */
export function schemeOf(provider: string, headers: Readonly<Record<string, string>>): Scheme {
  if (provider === 'codehost' || 'x-hub-signature-256' in headers) return 'codehost';
  if (provider === 'payments' || 'stripe-signature' in headers || 'payments-signature' in headers)
    return 'payments';
  if (provider === 'chat' || 'x-chat-signature' in headers || 'x-slack-signature' in headers) return 'chat';
  if ('webhook-signature' in headers || 'webhook-id' in headers) return 'standard-webhooks';
  return 'none';
}

/** Which of two header names the delivery used (the scheme's own, or its alias); the first by default. */
const nameUsed = (headers: Readonly<Record<string, string>>, names: readonly [string, string]): string =>
  names.find((n) => n in headers) ?? names[0];

/**
 * The headers to POST the delivery's `body` with: the recorded ones without redacted values and
 * hop headers, the original content type, and a new signature over exactly `body`.
 */
export function forwardHeaders(input: {
  readonly provider: string;
  readonly contentType: string | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  readonly secret: string;
  readonly nowS: number;
}): { headers: Record<string, string>; scheme: Scheme } {
  const stored = input.headers;
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(stored)) {
    const n = name.toLowerCase();
    if (value === REDACTED || HOP_HEADERS.has(n) || n.startsWith('x-forwarded-')) continue;
    out[n] = value;
  }
  if (input.contentType) out['content-type'] = input.contentType;
  const { body, secret } = input;
  const ts = String(input.nowS);
  const scheme = schemeOf(input.provider, stored);
  switch (scheme) {
    case 'codehost':
      out['x-hub-signature-256'] = `sha256=${hmacHex(secret, body)}`;
      break;
    case 'payments':
      out[nameUsed(stored, ['stripe-signature', 'payments-signature'])] =
        `t=${ts},v1=${hmacHex(secret, ts, '.', body)}`;
      break;
    case 'chat':
      out[nameUsed(stored, ['x-chat-request-timestamp', 'x-slack-request-timestamp'])] = ts;
      out[nameUsed(stored, ['x-chat-signature', 'x-slack-signature'])] =
        `v0=${hmacHex(secret, 'v0:', ts, ':', body)}`;
      break;
    case 'standard-webhooks': {
      const id = out['webhook-id'] ?? `msg_${randomBytes(12).toString('hex')}`;
      const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
      const signature = createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest('base64');
      out['webhook-id'] = id;
      out['webhook-timestamp'] = ts;
      out['webhook-signature'] = `v1,${signature}`;
      break;
    }
    case 'none':
      break;
    default: {
      const never: never = scheme;
      return never;
    }
  }
  return { headers: out, scheme };
}
