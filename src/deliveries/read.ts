import {
  deliveryEventOf,
  type EventDetail,
  type EventScope,
  eventDetail,
  findDeliveryToReplay,
  getLoggedDelivery,
  recentWebhookDeliveries,
} from '../../projections/log.queries.ts';
import type { DB } from '../db/database.ts';
import { decodeDeliveryMetadata } from '../domain/events.ts';
import type { EventStore, RecordedEvent } from '../eventstore/port.ts';

/**
 * A delivery's payload and headers are stored once, in its event on the `deliveries` stream; the
 * log read model keeps the summary (issue 20). These read the two together. Retention truncates
 * the stream and deletes the rows in the same cycle (src/retention/job.ts): a delivery whose event
 * is gone is gone, even while its row waits for the next batch of the prune.
 */
export interface DeliveryReadDeps {
  readonly db: DB;
  readonly store: EventStore;
}

/** Delivery `id`'s event (its `deliveries` revision id - 1), while the store holds it. */
export function readDeliveryEvent(
  store: EventStore,
  id: number | bigint,
): Promise<RecordedEvent | undefined> {
  if (BigInt(id) < 1n) return Promise.resolve(undefined);
  const { streamId, revision } = deliveryEventOf(Number(id));
  return store.readEvent(streamId, revision);
}

/** Spec 4.6 / 2.3: the row of the log, the bytes of the event; undefined when either is missing or `scope` does not see it. */
export async function deliveryDetail(
  deps: DeliveryReadDeps,
  id: number | bigint | string,
  scope?: EventScope,
): Promise<EventDetail | undefined> {
  const row = await getLoggedDelivery(deps.db, id, scope);
  if (!row) return undefined;
  const event = await readDeliveryEvent(deps.store, row.id);
  return event ? eventDetail(row, event) : undefined;
}

/** A delivery to replay: whose it was (its provider), its content type and its bytes. */
export async function deliveryToReplay(
  deps: DeliveryReadDeps,
  id: number,
): Promise<
  | {
      readonly id: number;
      readonly provider: string;
      readonly content_type: string | null;
      readonly payload: Uint8Array;
    }
  | undefined
> {
  const row = await findDeliveryToReplay(deps.db, id);
  if (!row) return undefined;
  const event = await readDeliveryEvent(deps.store, row.id);
  if (!event) return undefined;
  return { id: Number(row.id), provider: row.provider, content_type: row.content_type, payload: event.data };
}

/** A webhook's recent deliveries with their headers and payloads, newest first (the rules' dry run). */
export async function recentWebhookDeliveriesWithBytes(
  deps: DeliveryReadDeps,
  webhookId: string,
  options: { readonly eventId?: number | undefined; readonly limit: number },
) {
  const rows = await recentWebhookDeliveries(deps.db, webhookId, options);
  const events = await Promise.all(rows.map((r) => readDeliveryEvent(deps.store, r.id)));
  return rows.flatMap((r, i) => {
    const event = events[i];
    if (!event) return [];
    return [{ ...r, headers: decodeDeliveryMetadata(event).headers, payload: event.data }];
  });
}
