import { checkTimestamp, findMatchingSecret, parseHexDigest } from './hmac.ts';
import {
  headerValue,
  passDetail,
  reject,
  type SignatureScheme,
  type VerifyInput,
  type VerifyResult,
} from './types.ts';

const SIGNATURE_HEADERS = ['x-chat-signature', 'x-slack-signature'] as const;
export const CHAT_TIMESTAMP_HEADERS = ['x-chat-request-timestamp', 'x-slack-request-timestamp'] as const;

/**
 * `X-Chat-Signature: v0=<hex HMAC-SHA256 of "v0:<ts>:<body>">` with the timestamp in
 * `X-Chat-Request-Timestamp` (Slack's v0 scheme and header names are accepted too). A missing
 * timestamp header is a 400 (check 4 of design.md); a present but stale or malformed one fails
 * the signature (401), because the timestamp is part of what is signed.
 */
export const chatScheme: SignatureScheme = {
  provider: 'chat',
  signatureHeaders: SIGNATURE_HEADERS,
  verify(input: VerifyInput): VerifyResult {
    const ts = headerValue(input.headers, CHAT_TIMESTAMP_HEADERS);
    if (ts === undefined) {
      return { ok: false, code: 'missing_header', reason: 'missing X-Chat-Request-Timestamp header' };
    }
    const header = headerValue(input.headers, SIGNATURE_HEADERS);
    if (header === undefined) return reject('missing X-Chat-Signature header');
    const trimmed = header.trim();
    if (!trimmed.startsWith('v0=')) return reject('signature header must start with v0=');
    const digest = parseHexDigest(trimmed.slice('v0='.length));
    if (!digest) return reject('signature is not 64 hex digits');
    const timestamp = ts.trim();
    const fresh = checkTimestamp(timestamp, input.nowMs, input.toleranceS);
    if (!fresh.ok) return reject(fresh.reason);
    const index = findMatchingSecret(input.secrets, [digest], 'v0:', timestamp, ':', input.body);
    if (index < 0) return reject('signature does not match the body');
    return { ok: true, detail: passDetail('v0', index, input.secrets.length) };
  },
};
