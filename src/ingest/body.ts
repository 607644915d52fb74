/**
 * Request bodies as hookline accepts them: JSON or form, classified from Content-Type and checked
 * only after the signature (checks 6 and 7 of design.md). The bytes themselves are never changed;
 * parsing only serves validation and the extraction of event_type / external_id.
 */
export type ParsedBody =
  | { readonly kind: 'json'; readonly value: unknown }
  | { readonly kind: 'form'; readonly value: URLSearchParams };

export type BodyCheck =
  | { readonly ok: true; readonly body: ParsedBody }
  | {
      readonly ok: false;
      readonly code: 'invalid_body' | 'unsupported_content_type';
      readonly reason: string;
    };

export function mediaTypeOf(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const media = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return media.length > 0 ? media : undefined;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const lenientUtf8 = new TextDecoder('utf-8');

export function checkBody(contentType: string | undefined, bytes: Uint8Array): BodyCheck {
  const media = mediaTypeOf(contentType);
  if (media === 'application/json') {
    let text: string;
    try {
      text = strictUtf8.decode(bytes);
    } catch {
      return { ok: false, code: 'invalid_body', reason: 'JSON body is not valid UTF-8' };
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return { ok: false, code: 'invalid_body', reason: 'body is not valid JSON' };
    }
    if (value === null || typeof value !== 'object') {
      return { ok: false, code: 'invalid_body', reason: 'JSON body must be an object or an array' };
    }
    return { ok: true, body: { kind: 'json', value } };
  }
  if (media === 'application/x-www-form-urlencoded') {
    // Any byte string reads as a form; bytes that are not UTF-8 are kept verbatim in the log and
    // only become U+FFFD in the parsed view used for extraction.
    return { ok: true, body: { kind: 'form', value: new URLSearchParams(lenientUtf8.decode(bytes)) } };
  }
  return {
    ok: false,
    code: 'unsupported_content_type',
    reason:
      media === undefined
        ? 'missing Content-Type: send application/json or application/x-www-form-urlencoded'
        : `content type ${media} is not accepted: send application/json or application/x-www-form-urlencoded`,
  };
}
