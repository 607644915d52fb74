import type { FormObject, JsonValue, RuleDelivery } from './types.ts';

/** The stored delivery fields a rule's view is built from (a subset of DeliveryMetadata). */
export interface StoredDeliveryView {
  readonly provider: string;
  readonly event_type: string | null;
  readonly content_type: string | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly received_at: string;
}

const mediaType = (contentType: string | null): string =>
  (contentType ?? '').split(';')[0]!.trim().toLowerCase();

/** A form body as rules see it: each field a string, repeated fields an array in order. */
export function parseForm(text: string): FormObject {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const prior = out[key];
    if (prior === undefined) out[key] = value;
    else if (Array.isArray(prior)) prior.push(value);
    else out[key] = [prior, value];
  }
  return out;
}

/**
 * The rule's view of a stored delivery: the raw body parsed as JSON (`application/json` or any
 * `+json` type) or as a form (`application/x-www-form-urlencoded`); anything else, an empty body
 * or a body that does not parse, gives `payload: null`.
 */
export function toRuleDelivery(meta: StoredDeliveryView, body: Uint8Array): RuleDelivery {
  return {
    event_type: meta.event_type,
    headers: { ...meta.headers },
    payload: parsePayload(meta.content_type, body),
    provider: meta.provider,
    received_at: meta.received_at,
  };
}

function parsePayload(contentType: string | null, body: Uint8Array): JsonValue | FormObject | null {
  if (body.byteLength === 0) return null;
  const type = mediaType(contentType);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return null;
  }
  if (type === 'application/json' || type.endsWith('+json')) {
    try {
      return JSON.parse(text) as JsonValue;
    } catch {
      return null;
    }
  }
  if (type === 'application/x-www-form-urlencoded') return parseForm(text);
  return null;
}
