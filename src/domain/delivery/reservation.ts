import { createHash } from 'node:crypto';

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
export type ReservationEvent =
  | {
      readonly type: 'DeliveryReserved';
      readonly data: { readonly event_uuid: string; readonly provider: string; readonly at: string };
    }
  | {
      readonly type: 'ReservationTakenOver';
      readonly data: {
        readonly event_uuid: string;
        readonly previous_event_uuid: string;
        readonly reason: 'original_missing';
        readonly at: string;
      };
    };

export interface ReservationState {
  /** The UUID of the delivery event that holds the external id. */
  readonly holder: string;
  /** When the current holder reserved it. */
  readonly since: Date;
  /** The stream revision this state was read at (for the takeover's expected revision). */
  readonly revision: bigint;
}

export const reservationStream = (provider: string, externalId: string): string =>
  `dedup-${provider}-${createHash('sha256').update(externalId).digest('hex')}`;

/** Each event fully replaces the holder, so the previous state is not consulted. */
export function evolveReservation(
  _state: ReservationState | undefined,
  event: ReservationEvent,
  revision: bigint,
): ReservationState {
  switch (event.type) {
    case 'DeliveryReserved':
    case 'ReservationTakenOver':
      return { holder: event.data.event_uuid, since: new Date(event.data.at), revision };
    default: {
      const never: never = event;
      throw new Error(`unhandled reservation event ${JSON.stringify(never)}`);
    }
  }
}

export type DuplicateDecision =
  | { readonly action: 'answer_original' }
  | { readonly action: 'wait' }
  | { readonly action: 'take_over'; readonly event: ReservationEvent };

/**
 * A copy arrived for a reserved external id. The original's delivery was `found` or not; if not,
 * wait while the holder may still be appending, and take over once the grace period is past.
 */
export function decideOnDuplicate(
  state: ReservationState,
  found: boolean,
  now: Date,
  graceMs: number,
  newEventUuid: string,
): DuplicateDecision {
  if (found) return { action: 'answer_original' };
  if (now.getTime() - state.since.getTime() < graceMs) return { action: 'wait' };
  return {
    action: 'take_over',
    event: {
      type: 'ReservationTakenOver',
      data: {
        event_uuid: newEventUuid,
        previous_event_uuid: state.holder,
        reason: 'original_missing',
        at: now.toISOString(),
      },
    },
  };
}
