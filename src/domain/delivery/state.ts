import type { ReservationEvent } from './events.ts';

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
