import type { ProjectionRunner } from '../../projections/engine/types.ts';
import { type EventDetail, type EventScope, getEvent } from '../../projections/log.queries.ts';
import type { DB } from '../db/database.ts';
import { DELIVERIES_STREAM } from '../domain/delivery/events.ts';
import { type EventStore, type Position, StreamNotFoundError } from '../eventstore/port.ts';

export interface LoggedDeliveryDeps {
  readonly db: DB;
  readonly store: EventStore;
  readonly projections: Pick<ProjectionRunner, 'waitFor'>;
  /** How long to wait for the log read model to pass a delivery the store holds (default 2 s). */
  readonly waitMs?: number;
}

/** Where delivery `id` (its `deliveries` revision + 1) sits in the log, if the store holds it. */
async function deliveryPosition(store: EventStore, id: string): Promise<Position | undefined> {
  if (!/^[0-9]{1,18}$/.test(id) || BigInt(id) < 1n) return undefined;
  const revision = BigInt(id) - 1n;
  try {
    for await (const e of store.readStream(DELIVERIES_STREAM, { fromRevision: revision, maxCount: 1 })) {
      return e.revision === revision ? e.position : undefined;
    }
  } catch (err) {
    if (!(err instanceof StreamNotFoundError)) throw err;
  }
  return undefined;
}

/**
 * One delivery from the log read model, reading your own write (README "Read models"): a delivery
 * acknowledged a moment ago, or shown live, is in the log before its read model has applied it.
 * When the store holds the id, wait, bounded, for the log read model to pass it, then read again;
 * past the bound the wait rejects (`unavailable`, a 503), never a 404 for a delivery that exists.
 * An id the store does not hold (never given, or pruned by retention) is undefined at once, and
 * so is one outside `scope` once the log has it (log.queries.ts, EventScope).
 */
export async function findLoggedDelivery(
  deps: LoggedDeliveryDeps,
  id: string,
  scope?: EventScope,
): Promise<EventDetail | undefined> {
  const found = await getEvent(deps.db, id, scope);
  if (found) return found;
  const position = await deliveryPosition(deps.store, id);
  if (position === undefined) return undefined;
  await deps.projections.waitFor(position, { projection: 'log', timeoutMs: deps.waitMs ?? 2000 });
  return getEvent(deps.db, id, scope);
}
