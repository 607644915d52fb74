import { findMatchingSecret, parseHexDigest } from './hmac.ts';
import {
  headerValue,
  passDetail,
  reject,
  type SignatureScheme,
  type VerifyInput,
  type VerifyResult,
} from './types.ts';

const SIGNATURE_HEADERS = ['x-hub-signature-256'] as const;

/** `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>` (the code host's, and GitHub's, scheme). */
export const codehostScheme: SignatureScheme = {
  provider: 'codehost',
  signatureHeaders: SIGNATURE_HEADERS,
  verify(input: VerifyInput): VerifyResult {
    const header = headerValue(input.headers, SIGNATURE_HEADERS);
    if (header === undefined) return reject('missing X-Hub-Signature-256 header');
    const trimmed = header.trim();
    if (!trimmed.startsWith('sha256=')) return reject('signature header must start with sha256=');
    const digest = parseHexDigest(trimmed.slice('sha256='.length));
    if (!digest) return reject('signature is not 64 hex digits');
    const index = findMatchingSecret(input.secrets, [digest], input.body);
    if (index < 0) return reject('signature does not match the body');
    return { ok: true, detail: passDetail('sha256', index, input.secrets.length) };
  },
};
