import type { ReservationEvent } from './events.ts';
import type { ReservationState } from './state.ts';

export const reserveDelivery = (eventUuid: string, provider: string, now: Date): ReservationEvent => ({
  type: 'DeliveryReserved',
  data: { event_uuid: eventUuid, provider, at: now.toISOString() },
});

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
