import { createHmac, timingSafeEqual } from 'node:crypto';

/** HMAC-SHA256 over the concatenation of `parts`, without copying the body into a new buffer. */
export function hmacSha256(secret: string, ...parts: readonly (string | Uint8Array)[]): Buffer {
  const mac = createHmac('sha256', secret);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

const HEX_64 = /^[0-9a-fA-F]{64}$/;

/** A SHA-256 digest written as 64 hex digits, or undefined when the text is anything else. */
export function parseHexDigest(text: string): Buffer | undefined {
  return HEX_64.test(text) ? Buffer.from(text, 'hex') : undefined;
}

/**
 * Constant-time equality of two byte strings. Callers only ever compare a 32-byte digest with a
 * 32-byte digest; unequal lengths answer false without touching the contents.
 */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Index (0-based) of the first secret whose HMAC over `parts` equals one of `candidates`, or -1.
 * Every secret is tried against every candidate, so the work done does not depend on which matched.
 */
export function findMatchingSecret(
  secrets: readonly string[],
  candidates: readonly Uint8Array[],
  ...parts: readonly (string | Uint8Array)[]
): number {
  let found = -1;
  for (let i = 0; i < secrets.length; i++) {
    const expected = hmacSha256(secrets[i]!, ...parts);
    for (const candidate of candidates) {
      if (bytesEqual(expected, candidate) && found === -1) found = i;
    }
  }
  return found;
}

export type TimestampCheck =
  | { readonly ok: true; readonly seconds: number }
  | { readonly ok: false; readonly reason: string };

/**
 * Unix timestamps are whole seconds. Eleven digits or more is a millisecond (or later) value,
 * refused by name rather than as merely stale so the sender learns what is wrong.
 */
export function checkTimestamp(text: string, nowMs: number, toleranceS: number): TimestampCheck {
  if (!/^[0-9]{1,10}$/.test(text)) {
    if (/^[0-9]{11,}$/.test(text))
      return { ok: false, reason: 'timestamp must be in seconds, not milliseconds' };
    return { ok: false, reason: 'timestamp is not a whole number of seconds' };
  }
  const seconds = Number(text);
  const skew = Math.abs(nowMs / 1000 - seconds);
  if (skew > toleranceS) return { ok: false, reason: `timestamp outside the ${toleranceS} s window` };
  return { ok: true, seconds };
}
