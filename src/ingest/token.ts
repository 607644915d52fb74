import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** 32 random bytes, base64url (43 characters): shown once, stored only as its SHA-256. */
export const generateToken = (): string => randomBytes(32).toString('base64url');

export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/** Constant-time: both sides are 32-byte digests, so their lengths never differ. */
export function tokenMatches(presented: string, storedHashHex: string): boolean {
  const expected = Buffer.from(storedHashHex, 'hex');
  const actual = createHash('sha256').update(presented).digest();
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/**
 * The token a generic sender presented: `Authorization: Bearer`, then `X-Hookline-Token`, then a
 * path token, then `?token=` (spec 5 rule 3 prefers headers; the URL forms are fallbacks).
 */
export function presentedToken(
  headers: IncomingHttpHeaders,
  pathToken: string | undefined,
  queryToken: string | undefined,
): string | undefined {
  const auth = headers.authorization;
  if (auth) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (m) return m[1];
  }
  const header = headers['x-hookline-token'];
  const h = Array.isArray(header) ? header[0] : header;
  if (h && h.trim().length > 0) return h.trim();
  if (pathToken) return pathToken;
  if (queryToken) return queryToken;
  return undefined;
}
