import type { ProjectionRunner } from '../../projections/engine/types.ts';
import type { EventDetail, EventScope } from '../../projections/log.queries.ts';
import type { DB } from '../db/database.ts';
import { deliveryDetail, readDeliveryEvent } from '../deliveries/read.ts';
import type { EventStore } from '../eventstore/port.ts';

/**
 * How long a read that follows the caller's own write waits for the read models (issue 15: "about
 * 2 s"): the log read model here, and the operator API's answers to its writes (http/api).
 */
export const READ_YOUR_WRITES_MS = 2000;

export interface LoggedDeliveryDeps {
  readonly db: DB;
  readonly store: EventStore;
  readonly projections: Pick<ProjectionRunner, 'waitFor'>;
  /** How long to wait for the log read model to pass a delivery the store holds (default 2 s). */
  readonly waitMs?: number;
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
  const found = await deliveryDetail(deps, id, scope);
  if (found) return found;
  if (!/^[0-9]{1,18}$/.test(id)) return undefined;
  const event = await readDeliveryEvent(deps.store, BigInt(id));
  if (event === undefined) return undefined;
  await deps.projections.waitFor(event.position, {
    projection: 'log',
    timeoutMs: deps.waitMs ?? READ_YOUR_WRITES_MS,
  });
  return deliveryDetail(deps, id, scope);
}
