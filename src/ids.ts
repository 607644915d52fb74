import { createHash, randomBytes } from 'node:crypto';

/** RFC 4648 base32, lower case: readable in URLs and slugs, no padding. */
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** `length` random base32 characters (5 bits each; 256 is a multiple of 32, so no bias). */
export function randomBase32(length: number): string {
  let out = '';
  for (const byte of randomBytes(length)) out += BASE32[byte & 31];
  return out;
}

/** Prefixed opaque ids (design.md): never mistaken for a slug, which has no underscore. */
export type IdPrefix = 'ag' | 'ep' | 'td' | 'wh' | 'fr';

export const newId = (prefix: IdPrefix): string => `${prefix}_${randomBase32(20)}`;

export const isId = (prefix: IdPrefix, value: string): boolean =>
  new RegExp(`^${prefix}_[a-z2-7]{20}$`).test(value);

export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');
