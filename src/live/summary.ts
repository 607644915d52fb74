import {
  DELIVERIES_STREAM,
  DELIVERY_RECEIVED,
  type DeliveryMetadata,
  eventIdFromRevision,
  type TrustMode,
} from '../domain/delivery/metadata.ts';
import { parseMetadata } from '../eventstore/codec.ts';
import type { RecordedEvent } from '../eventstore/port.ts';

/** Spec 2.2: a list row and the `event-received` payload; never the payload or the headers. */
export interface EventSummary {
  readonly id: number;
  readonly provider: string;
  readonly event_type: string | null;
  readonly trust_mode: TrustMode;
  readonly verified: boolean;
  readonly payload_size: number;
  readonly received_at: string;
}

/** One accepted delivery as the live side sees it: its global position and its summary. */
export interface LiveDelivery {
  readonly position: string;
  readonly summary: EventSummary;
}

export const isDelivery = (e: Pick<RecordedEvent, 'streamId' | 'type'>): boolean =>
  e.streamId === DELIVERIES_STREAM && e.type === DELIVERY_RECEIVED;

/** Read defensively: the metadata is our own, but an old or foreign event must not break the stream. */
type LooseMetadata = { readonly [K in keyof DeliveryMetadata]?: unknown };

/**
 * Builds the summary from the delivery's metadata (the body is the raw bytes and is never read
 * here). The id is the `deliveries` revision + 1 (design.md "Identifiers").
 */
export function toEventSummary(e: RecordedEvent): EventSummary | null {
  if (!isDelivery(e)) return null;
  let meta: LooseMetadata | null;
  try {
    meta = parseMetadata<LooseMetadata>(e);
  } catch {
    return null;
  }
  if (!meta || typeof meta.provider !== 'string') return null;
  return {
    id: eventIdFromRevision(e.revision),
    provider: meta.provider,
    event_type: typeof meta.event_type === 'string' ? meta.event_type : null,
    trust_mode: (typeof meta.trust_mode === 'string' ? meta.trust_mode : 'open') as TrustMode,
    verified: meta.verified === true,
    payload_size: typeof meta.payload_size === 'number' ? meta.payload_size : e.data.byteLength,
    received_at: typeof meta.received_at === 'string' ? meta.received_at : e.createdAt.toISOString(),
  };
}
