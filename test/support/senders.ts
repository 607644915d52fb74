import { createHmac } from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';

/**
 * The `X-Hub-Signature-256` a codehost sender puts on a body. The codehost scheme is GitHub's
 * (spec 5), so a happy-path sender signs with GitHub's own code, `@octokit/webhooks-methods`,
 * never with an HMAC of ours that could share a mistake with the verifier. That library signs
 * strings only: a body of bytes that are not UTF-8 is signed with the same published algorithm.
 */
export async function codehostSignature(secret: string, body: string | Uint8Array): Promise<string> {
  if (typeof body === 'string') return sign(secret, body);
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}
