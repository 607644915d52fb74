import { describe, expect, it } from 'vitest';
import { decideOnDuplicate } from '../../../src/domain/delivery/decide.ts';
import { evolveReservation } from '../../../src/domain/delivery/state.ts';

const NOW = new Date('2025-06-01T12:00:00.000Z');

describe('external id reservation', () => {
  const reserved = evolveReservation(undefined, {
    type: 'DeliveryReserved',
    data: { event_uuid: 'u1', provider: 'codehost', at: NOW.toISOString() },
  });

  it('answers with the original when its delivery is found', () => {
    expect(decideOnDuplicate(reserved, true, NOW, 30_000, 'u2')).toEqual({ action: 'answer_original' });
  });

  it('waits while the holder may still be appending, then takes over at the revision read', () => {
    expect(decideOnDuplicate(reserved, false, new Date(NOW.getTime() + 29_999), 30_000, 'u2')).toEqual({
      action: 'wait',
    });
    const later = new Date(NOW.getTime() + 30_000);
    expect(decideOnDuplicate(reserved, false, later, 30_000, 'u2')).toEqual({
      action: 'take_over',
      event: {
        type: 'ReservationTakenOver',
        data: {
          event_uuid: 'u2',
          previous_event_uuid: 'u1',
          reason: 'original_missing',
          at: later.toISOString(),
        },
      },
    });
  });

  it('follows a takeover', () => {
    const taken = evolveReservation(reserved, {
      type: 'ReservationTakenOver',
      data: {
        event_uuid: 'u2',
        previous_event_uuid: 'u1',
        reason: 'original_missing',
        at: NOW.toISOString(),
      },
    });
    expect(taken).toEqual({ holder: 'u2', since: NOW });
  });
});
