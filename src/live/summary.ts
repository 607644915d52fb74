import {
  DELIVERIES_STREAM,
  DELIVERY_RECEIVED,
  type DeliveryMetadata,
  eventIdFromRevision,
  type TrustMode,
} from '../domain/delivery/events.ts';
import { decodeDeliveryMetadata } from '../domain/events.ts';
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

/**
 * Builds the summary from the delivery's metadata (the body is the raw bytes and is never read
 * here). The id is the `deliveries` revision + 1 (design.md "Identifiers").
 */
export function toEventSummary(e: RecordedEvent): EventSummary | null {
  if (!isDelivery(e)) return null;
  let meta: DeliveryMetadata;
  try {
    meta = decodeDeliveryMetadata(e);
  } catch {
    // An event this version cannot read must not break the stream for every client.
    return null;
  }
  return {
    id: eventIdFromRevision(e.revision),
    provider: meta.provider,
    event_type: meta.event_type,
    trust_mode: meta.trust_mode,
    verified: meta.verified,
    payload_size: meta.payload_size,
    received_at: meta.received_at,
  };
}
