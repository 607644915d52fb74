import type { IncomingHttpHeaders } from 'node:http';
import { SIGNATURE_HEADER_NAMES } from './signatures/index.ts';

export const REDACTED = '«redacted»';

/** Credentials by name: signatures (both naming families), bearer and ingest tokens, cookies. */
const ALWAYS_REDACTED = new Set<string>([
  ...SIGNATURE_HEADER_NAMES,
  'x-hub-signature', // the code host's legacy sha1 signature
  'authorization',
  'proxy-authorization',
  'x-hookline-token',
  'cookie',
  'set-cookie',
]);

/** Any header whose name says it holds a credential (`X-Gitlab-Token`, `X-Api-Key`, ...). */
const CREDENTIAL_NAME = /token|secret|passw|api-?key|signature|auth/i;

/**
 * The headers as stored and displayed: one string per name, credentials replaced by the marker,
 * and every occurrence of a known token value (the one that authenticated this request) removed
 * from whatever header it hides in.
 */
export function sanitizeHeaders(
  headers: IncomingHttpHeaders,
  knownTokens: readonly string[] = [],
): Record<string, string> {
  const out: Record<string, string> = {};
  const tokens = knownTokens.filter((t) => t.length >= 8);
  for (const [rawName, rawValue] of Object.entries(headers)) {
    if (rawValue === undefined) continue;
    const name = rawName.toLowerCase();
    if (ALWAYS_REDACTED.has(name) || CREDENTIAL_NAME.test(name)) {
      out[name] = REDACTED;
      continue;
    }
    let value = Array.isArray(rawValue) ? rawValue.join(', ') : String(rawValue);
    for (const token of tokens) {
      if (value.includes(token)) value = value.split(token).join(REDACTED);
    }
    out[name] = value;
  }
  return out;
}
