import type { DeliveryInput } from '../recorder.ts';

/**
 * One Redis Streams entry turned into a delivery for the log (spec 1.2, 2.1: family and trust mode
 * `queue`, no source address, never `verified`). Pure: no I/O, the receive time passed in.
 *
 * Fields read from each entry (docs/reference/api.md, "Broker ingestion"):
 * - `payload`: the body, bytes kept exactly (read as Buffers, so non-UTF-8 survives);
 * - `content_type`: default `application/json`;
 * - `event_type`: optional;
 * - `delivery_id`: the external id for dedup; default the stream entry id, so a redelivery of the
 *   same entry (crash between append and XACK, a claim after a consumer died) is stored once.
 * Other fields are ignored. An entry without `payload` records an empty body.
 */

export const DEFAULT_BROKER_CONTENT_TYPE = 'application/json';

/** The provider name of a channel (design.md, "Identifiers"). */
export const brokerProviderName = (channel: string): string => `broker:${channel}`;

/** A broker delivery: the recorder's input with the queue path's fixed values. */
export type BrokerDelivery = DeliveryInput & {
  readonly family: 'queue';
  readonly trust_mode: 'queue';
  readonly verified: false;
  readonly source_ip: null;
  readonly external_id: string;
  readonly received_at: Date;
};

/** A stream entry as XREADGROUP / XAUTOCLAIM return it with the Buffer variants; `null` fields: deleted. */
export type RawEntry = readonly [id: Buffer | string, fields: readonly Buffer[] | null];

/** The same bounds as the HTTP receivers' extraction. */
const MAX_EVENT_TYPE = 200;
const MAX_EXTERNAL_ID = 1024;
const MAX_CONTENT_TYPE = 255;

/** Header-like text of a field: UTF-8, control characters dropped, bounded. Empty becomes null. */
function textField(value: Buffer | undefined, max: number): string | null {
  if (value === undefined) return null;
  let text = '';
  for (const ch of value.toString('utf8')) {
    const code = ch.codePointAt(0)!;
    if (code >= 0x20 && code !== 0x7f) text += ch;
  }
  text = text.trim();
  return text.length === 0 ? null : text.slice(0, max);
}

/** Field list `[name, value, name, value, ...]` to a map; the first occurrence of a name wins. */
export function fieldMap(fields: readonly Buffer[]): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i]!.toString('utf8');
    if (!out.has(name)) out.set(name, fields[i + 1]!);
  }
  return out;
}

export function toBrokerDelivery(
  channel: string,
  entryId: string,
  fields: readonly Buffer[],
  receivedAt: Date,
): BrokerDelivery {
  const map = fieldMap(fields);
  const payload = map.get('payload') ?? Buffer.alloc(0);
  // A copy detached from ioredis's reply buffer, so holding one delivery does not pin a whole reply.
  const body = new Uint8Array(payload.byteLength);
  body.set(payload);
  return {
    provider: brokerProviderName(channel),
    family: 'queue',
    trust_mode: 'queue',
    verified: false,
    verify_detail: channel,
    event_type: textField(map.get('event_type'), MAX_EVENT_TYPE),
    external_id: textField(map.get('delivery_id'), MAX_EXTERNAL_ID) ?? entryId,
    content_type: textField(map.get('content_type'), MAX_CONTENT_TYPE) ?? DEFAULT_BROKER_CONTENT_TYPE,
    source_ip: null,
    // No HTTP headers on this path; the entry id is kept so an operator can find it in Redis.
    headers: { 'x-broker-entry-id': entryId },
    received_at: receivedAt,
    payload: body,
  };
}
