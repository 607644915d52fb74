import { z } from 'zod';
import { defineEvent, typesOf } from '../shared.ts';

/** Spec 2.1 TrustMode, plus `operator` for todo hand-offs (design.md). */
export const TRUST_MODES = ['signed', 'token', 'open', 'queue', 'operator'] as const;
export type TrustMode = (typeof TRUST_MODES)[number];
/** Spec 2.1 ProviderFamily, plus `operator` for todo hand-offs. */
export const PROVIDER_FAMILIES = ['webhook', 'queue', 'operator'] as const;
export type ProviderFamily = (typeof PROVIDER_FAMILIES)[number];

/** Every accepted delivery from every path is one event of this type on this stream. */
export const DELIVERIES_STREAM = 'deliveries';
export const DELIVERY_RECEIVED = 'DeliveryReceived';

/**
 * The JSON metadata of a `DeliveryReceived` event; its data is the raw body, byte for byte.
 * `headers` are already sanitized. The event id (spec `id`) is the stream revision + 1.
 */
export const deliveryMetadataSchema = z.object({
  provider: z.string(),
  family: z.enum(PROVIDER_FAMILIES),
  trust_mode: z.enum(TRUST_MODES),
  verified: z.boolean(),
  verify_detail: z.string().nullable(),
  event_type: z.string().nullable(),
  external_id: z.string().nullable(),
  content_type: z.string().nullable(),
  source_ip: z.string().nullable(),
  headers: z.record(z.string(), z.string()),
  /** ISO-8601 with milliseconds. */
  received_at: z.string(),
  payload_size: z.number(),
  /** Set by paths that route (endpoint webhooks, hand-offs): where the delivery's todo went. */
  route: z.record(z.string(), z.unknown()).optional(),
});

export type DeliveryMetadata = z.infer<typeof deliveryMetadataSchema>;

/** Spec 2.5. */
export interface IngestAck {
  readonly id: number;
  readonly provider: string;
  readonly trust_mode: TrustMode;
  readonly verified: boolean;
  readonly received_at: string;
}

/** The spec's int64 event id from a `deliveries` revision. */
export const eventIdFromRevision = (revision: bigint): number => Number(revision + 1n);

/**
 * Dedup of external ids (design.md: "uniqueness via reservation streams"). Before a delivery with
 * an external id is appended, a reservation stream for (provider, sha256(external_id)) is created
 * with expected revision `no_stream`, naming the UUID the delivery event will carry. Whoever
 * creates it owns the id; every other copy finds the original by that UUID.
 *
 * A reservation can outlive its delivery: the process may crash between the two appends (an
 * orphan), or retention may prune the original. A copy that cannot find the holder's delivery
 * after the grace period takes the reservation over with `ReservationTakenOver`, appended at the
 * revision it read, so exactly one copy wins and then appends. The grace period must exceed the
 * longest time a holder can still be appending, or a slow original and its taker could both land.
 */
export const DeliveryReserved = defineEvent(
  'DeliveryReserved',
  z.object({ event_uuid: z.string(), provider: z.string(), at: z.string() }),
);

export const ReservationTakenOver = defineEvent(
  'ReservationTakenOver',
  z.object({
    event_uuid: z.string(),
    previous_event_uuid: z.string(),
    reason: z.literal('original_missing'),
    at: z.string(),
  }),
);

export const reservationEvents = [DeliveryReserved, ReservationTakenOver] as const;
export type ReservationEvent = z.infer<(typeof reservationEvents)[number]>;
export const RESERVATION_EVENT_TYPES = typesOf(reservationEvents);
