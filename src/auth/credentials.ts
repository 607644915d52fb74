import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Endpoint credentials (spec 2.9, 5 rule 6): a bearer with a fixed prefix, shown once at vend
 * time and kept only as its SHA-256. The prefix lets secret scanners spot a leaked one and lets
 * the operator API refuse it at a glance (spec 5 rule 5: it never authenticates there).
 */
export const ENDPOINT_TOKEN_PREFIX = 'hlk_';

/** 32 random bytes, base64url: 256 bits, so a hash lookup needs no salt and no slow KDF. */
export const mintEndpointToken = (): string =>
  `${ENDPOINT_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;

/** The secret part of an endpoint webhook's ingest URL `/webhooks/w/<token>`. */
export const mintIngestToken = (): string => randomBytes(32).toString('base64url');

export const isEndpointToken = (token: string): boolean => token.startsWith(ENDPOINT_TOKEN_PREFIX);

/** SHA-256, hex: what the event log and the read models keep instead of a credential. */
export const hashCredential = (token: string): string =>
  createHash('sha256').update(token, 'utf8').digest('hex');

/** Constant-time check of a presented credential against a stored hash. */
export function credentialMatches(token: string, storedHash: string): boolean {
  const presented = Buffer.from(hashCredential(token), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return stored.length === presented.length && timingSafeEqual(presented, stored);
}
