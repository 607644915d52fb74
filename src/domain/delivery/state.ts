import type { Decider } from '../shared.ts';
import { RESERVATION_EVENT_TYPES, type ReservationEvent } from './events.ts';

export interface ReservationState {
  /** The UUID of the delivery event that holds the external id. */
  readonly holder: string;
  /** When the current holder reserved it. */
  readonly since: Date;
}

/** Each event fully replaces the holder, so the previous state is not consulted. */
export function evolveReservation(
  _state: ReservationState | undefined,
  event: ReservationEvent,
): ReservationState {
  switch (event.type) {
    case 'DeliveryReserved':
    case 'ReservationTakenOver':
      return { holder: event.data.event_uuid, since: new Date(event.data.at) };
    default: {
      const never: never = event;
      throw new Error(`unhandled reservation event ${JSON.stringify(never)}`);
    }
  }
}

/**
 * How a reservation stream folds, for the command handler's read (readAggregate): no holder until
 * its first event. There is no decider to go with it: the reservation is appended with its
 * delivery in one transaction, outside the handler (docs/architecture.md, the one exception).
 */
export const reservationFolder: Pick<
  Decider<never, ReservationState | undefined, ReservationEvent>,
  'initialState' | 'evolve' | 'eventTypes'
> = {
  initialState: () => undefined,
  evolve: evolveReservation,
  eventTypes: RESERVATION_EVENT_TYPES,
};
