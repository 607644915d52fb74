import type { IncomingHttpHeaders } from 'node:http';

export type SignedProvider = 'codehost' | 'payments' | 'chat';

export interface VerifyInput {
  readonly headers: IncomingHttpHeaders;
  /** The raw body, exactly the bytes received. */
  readonly body: Uint8Array;
  /** Non-empty; any one verifies (rotation). */
  readonly secrets: readonly string[];
  readonly nowMs: number;
  readonly toleranceS: number;
}

/**
 * A rejection carries only a reason fit for a log line or a problem detail: never the signature
 * value, never a secret. `missing_header` is the 400 of check 4 (design.md), every other failure
 * is the 401 of check 5.
 */
export type VerifyResult =
  | { readonly ok: true; readonly detail: string }
  | { readonly ok: false; readonly code: 'missing_header' | 'invalid_signature'; readonly reason: string };

export interface SignatureScheme {
  readonly provider: SignedProvider;
  /** Header names that carry a signature (both the spec's neutral names and the real providers'). */
  readonly signatureHeaders: readonly string[];
  verify(input: VerifyInput): VerifyResult;
}

/** The first present header among `names` (lower case), as one string. */
export function headerValue(headers: IncomingHttpHeaders, names: readonly string[]): string | undefined {
  for (const name of names) {
    const v = headers[name];
    if (v === undefined) continue;
    return Array.isArray(v) ? v.join(', ') : v;
  }
  return undefined;
}

export const reject = (reason: string): VerifyResult => ({ ok: false, code: 'invalid_signature', reason });

/** Names the scheme and, under rotation, which secret matched (its position, never its value). */
export function passDetail(scheme: string, index: number, count: number): string {
  return count > 1
    ? `${scheme} signature verified (secret ${index + 1} of ${count})`
    : `${scheme} signature verified`;
}
