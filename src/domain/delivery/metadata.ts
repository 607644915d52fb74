/** Spec 2.1 TrustMode, plus `operator` for todo hand-offs (design.md). */
export type TrustMode = 'signed' | 'token' | 'open' | 'queue' | 'operator';
/** Spec 2.1 ProviderFamily, plus `operator` for todo hand-offs. */
export type ProviderFamily = 'webhook' | 'queue' | 'operator';

/** Every accepted delivery from every path is one event of this type on this stream. */
export const DELIVERIES_STREAM = 'deliveries';
export const DELIVERY_RECEIVED = 'DeliveryReceived';

/**
 * The JSON metadata of a `DeliveryReceived` event; its data is the raw body, byte for byte.
 * `headers` are already sanitized. The event id (spec `id`) is the stream revision + 1.
 */
export interface DeliveryMetadata {
  readonly provider: string;
  readonly family: ProviderFamily;
  readonly trust_mode: TrustMode;
  readonly verified: boolean;
  readonly verify_detail: string | null;
  readonly event_type: string | null;
  readonly external_id: string | null;
  readonly content_type: string | null;
  readonly source_ip: string | null;
  readonly headers: Readonly<Record<string, string>>;
  /** ISO-8601 with milliseconds. */
  readonly received_at: string;
  readonly payload_size: number;
  /** Set by paths that route (endpoint webhooks, hand-offs); shape owned by the routing module. */
  readonly route?: Readonly<Record<string, unknown>>;
}

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
