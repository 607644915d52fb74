import type { IncomingHttpHeaders } from 'node:http';
import type { ParsedBody } from './body.ts';

export interface DeliveryIdentity {
  /** The provider-declared type, or null. */
  readonly event_type: string | null;
  /** The provider's delivery id, used for idempotency, or null (then no dedup). */
  readonly external_id: string | null;
}

export type ExtractFamily = 'codehost' | 'payments' | 'chat' | 'generic';

const MAX_EVENT_TYPE = 200;
const MAX_EXTERNAL_ID = 1024;

function header(headers: IncomingHttpHeaders, names: readonly string[]): string | undefined {
  for (const name of names) {
    const v = headers[name];
    const s = Array.isArray(v) ? v[0] : v;
    if (s !== undefined && s.trim().length > 0) return s.trim();
  }
  return undefined;
}

function scalar(value: unknown): string | undefined {
  if (typeof value === 'string' && value.trim().length > 0) return value.trim();
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

function field(body: ParsedBody, ...path: string[]): string | undefined {
  if (body.kind === 'form') return path.length === 1 ? scalar(body.value.get(path[0]!)) : undefined;
  let node: unknown = body.value;
  for (const key of path) {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return scalar(node);
}

/** A form post whose `payload` field holds JSON (chat interactivity), parsed, else undefined. */
function formJsonPayload(body: ParsedBody): ParsedBody | undefined {
  if (body.kind !== 'form') return undefined;
  const raw = body.value.get('payload');
  if (!raw) return undefined;
  try {
    const value: unknown = JSON.parse(raw);
    return value !== null && typeof value === 'object' ? { kind: 'json', value } : undefined;
  } catch {
    return undefined;
  }
}

const bounded = (v: string | undefined, max: number): string | null =>
  v === undefined ? null : v.length > max ? v.slice(0, max) : v;

/**
 * Where each provider declares its type and delivery id (docs/reference/api.md, "Event type and external id"):
 * - codehost: headers `X-Codehost-Event` / `X-GitHub-Event` and `X-Codehost-Delivery` / `X-GitHub-Delivery`.
 * - payments: body fields `type` and `id` (the event object).
 * - chat: body `event.type` (event callbacks), else `type`, else a form's `payload.type` or `command`;
 *   the id is body `event_id`.
 * - generic: headers `X-Hookline-Event` / `X-Event-Type`, else body `type`, `event_type` or `event`;
 *   the id only from headers `X-Hookline-Delivery`, `X-Delivery-Id`, `Webhook-Id` or
 *   `Idempotency-Key` (a body `id` often names a resource, not a delivery, so it never dedups).
 */
export function extractIdentity(
  family: ExtractFamily,
  headers: IncomingHttpHeaders,
  body: ParsedBody,
): DeliveryIdentity {
  let type: string | undefined;
  let id: string | undefined;
  switch (family) {
    case 'codehost':
      type = header(headers, ['x-codehost-event', 'x-github-event']);
      id = header(headers, ['x-codehost-delivery', 'x-github-delivery']);
      break;
    case 'payments':
      type = field(body, 'type');
      id = field(body, 'id');
      break;
    case 'chat': {
      const interactive = formJsonPayload(body);
      type =
        field(body, 'event', 'type') ??
        field(body, 'type') ??
        (interactive ? field(interactive, 'type') : undefined) ??
        field(body, 'command');
      id = field(body, 'event_id');
      break;
    }
    case 'generic':
      type =
        header(headers, ['x-hookline-event', 'x-event-type']) ??
        field(body, 'type') ??
        field(body, 'event_type') ??
        field(body, 'event');
      id = header(headers, ['x-hookline-delivery', 'x-delivery-id', 'webhook-id', 'idempotency-key']);
      break;
    default: {
      const never: never = family;
      throw new Error(`unknown family ${String(never)}`);
    }
  }
  return { event_type: bounded(type, MAX_EVENT_TYPE), external_id: bounded(id, MAX_EXTERNAL_ID) };
}
