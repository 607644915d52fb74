import { checkTimestamp, findMatchingSecret, parseHexDigest } from './hmac.ts';
import {
  headerValue,
  passDetail,
  reject,
  type SignatureScheme,
  type VerifyInput,
  type VerifyResult,
} from './types.ts';

const SIGNATURE_HEADERS = ['payments-signature', 'stripe-signature'] as const;
/** More v1 entries than this is not a rotation, it is an attempt to make us hash in a loop. */
const MAX_V1 = 16;

export interface ParsedPaymentsHeader {
  readonly timestamp: string;
  readonly v1: readonly Buffer[];
}

/**
 * `t=<seconds>,v1=<hex>[,v1=<hex>...]`; other schemes (v0, future ones) are ignored, as the
 * payments provider's own libraries do. Exactly one `t`; at least one well-formed `v1`.
 */
export function parsePaymentsHeader(header: string): ParsedPaymentsHeader | string {
  let timestamp: string | undefined;
  const v1: Buffer[] = [];
  for (const item of header.split(',')) {
    const eq = item.indexOf('=');
    if (eq < 0) continue;
    const key = item.slice(0, eq).trim();
    const value = item.slice(eq + 1).trim();
    if (key === 't') {
      if (timestamp !== undefined) return 'more than one t= in the signature header';
      timestamp = value;
    } else if (key === 'v1') {
      const digest = parseHexDigest(value);
      if (digest) v1.push(digest);
    }
  }
  if (timestamp === undefined) return 'no t= timestamp in the signature header';
  if (v1.length === 0) return 'no well-formed v1= signature in the signature header';
  if (v1.length > MAX_V1) return `more than ${MAX_V1} v1= signatures`;
  return { timestamp, v1 };
}

/** `Payments-Signature` (or `Stripe-Signature`): HMAC-SHA256 over `<t>.<body>`, fresh within the window. */
export const paymentsScheme: SignatureScheme = {
  provider: 'payments',
  signatureHeaders: SIGNATURE_HEADERS,
  verify(input: VerifyInput): VerifyResult {
    const header = headerValue(input.headers, SIGNATURE_HEADERS);
    if (header === undefined) return reject('missing Payments-Signature header');
    const parsed = parsePaymentsHeader(header);
    if (typeof parsed === 'string') return reject(parsed);
    const fresh = checkTimestamp(parsed.timestamp, input.nowMs, input.toleranceS);
    if (!fresh.ok) return reject(fresh.reason);
    const index = findMatchingSecret(input.secrets, parsed.v1, parsed.timestamp, '.', input.body);
    if (index < 0) return reject('no v1 signature matches the body');
    return { ok: true, detail: passDetail('v1', index, input.secrets.length) };
  },
};
