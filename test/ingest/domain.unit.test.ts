import { describe, expect, it } from 'vitest';
import {
  decideOnDuplicate,
  evolveReservation,
  reservationStream,
} from '../../src/domain/delivery/reservation.ts';
import {
  decide,
  evolve,
  initialProviderState,
  type ProviderCommand,
  type ProviderEvent,
  type ProviderKind,
  parseProviderName,
} from '../../src/domain/provider/index.ts';
import { HooklineError } from '../../src/errors.ts';

const NOW = new Date('2025-06-01T12:00:00.000Z');

/** Given events on a provider's stream, when a command, then events (or an error code). */
function given(name: string, kind: ProviderKind, configured: boolean, events: ProviderEvent[]) {
  const state = events.reduce(evolve, initialProviderState(name, kind, configured));
  return {
    when: (command: ProviderCommand) => ({
      thenEvents: (expected: ProviderEvent[]) => expect(decide(command, state, NOW)).toEqual(expected),
      thenFails: (code: string) => {
        try {
          decide(command, state, NOW);
        } catch (e) {
          expect(e).toBeInstanceOf(HooklineError);
          expect((e as HooklineError).code).toBe(code);
          return;
        }
        throw new Error('expected the command to fail');
      },
    }),
    state,
  };
}

const created: ProviderEvent = {
  type: 'GenericProviderCreated',
  data: {
    name: 'generic:ci',
    trust_mode: 'token',
    token_hash: 'ab'.repeat(32),
    created_by: 'admin',
    created_at: NOW.toISOString(),
  },
};
const at = NOW.toISOString();

describe('provider aggregate', () => {
  it('creates a generic provider, disabled', () => {
    given('generic:ci', 'generic', false, [])
      .when({
        type: 'CreateGenericProvider',
        name: 'generic:ci',
        trust_mode: 'token',
        token_hash: 'ab'.repeat(32),
        by: 'admin',
      })
      .thenEvents([created]);
    expect(given('generic:ci', 'generic', false, [created]).state).toMatchObject({
      exists: true,
      enabled: false,
    });
  });

  it('refuses to create one twice', () => {
    given('generic:ci', 'generic', false, [created])
      .when({
        type: 'CreateGenericProvider',
        name: 'generic:ci',
        trust_mode: 'open',
        token_hash: null,
        by: 'admin',
      })
      .thenFails('conflict');
  });

  it('enables a created provider and says nothing when it already is', () => {
    given('generic:ci', 'generic', false, [created])
      .when({ type: 'SetProviderEnabled', name: 'generic:ci', enabled: true, by: 'admin' })
      .thenEvents([{ type: 'ProviderEnabled', data: { name: 'generic:ci', by: 'admin', at } }]);
    given('generic:ci', 'generic', false, [
      created,
      { type: 'ProviderEnabled', data: { name: 'generic:ci', by: 'admin', at } },
    ])
      .when({ type: 'SetProviderEnabled', name: 'generic:ci', enabled: true, by: 'admin' })
      .thenEvents([]);
  });

  it('disables a configured signed provider (enabled by default) and refuses an unconfigured one', () => {
    given('codehost', 'codehost', true, [])
      .when({ type: 'SetProviderEnabled', name: 'codehost', enabled: false, by: 'admin' })
      .thenEvents([{ type: 'ProviderDisabled', data: { name: 'codehost', by: 'admin', at } }]);
    given('payments', 'payments', false, [])
      .when({ type: 'SetProviderEnabled', name: 'payments', enabled: false, by: 'admin' })
      .thenFails('not_found');
    given('generic:nope', 'generic', false, [])
      .when({ type: 'SetProviderEnabled', name: 'generic:nope', enabled: true, by: 'admin' })
      .thenFails('not_found');
  });

  it('parses provider names', () => {
    expect(parseProviderName('generic:ci-1')).toMatchObject({ kind: 'generic', suffix: 'ci-1' });
    expect(parseProviderName('broker:orders')).toMatchObject({ kind: 'broker', suffix: 'orders' });
    expect(parseProviderName('generic:Bad')).toBeUndefined();
    expect(parseProviderName('github')).toBeUndefined();
  });
});

describe('external id reservation', () => {
  const reserved = evolveReservation(
    undefined,
    { type: 'DeliveryReserved', data: { event_uuid: 'u1', provider: 'codehost', at: NOW.toISOString() } },
    0n,
  );

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
    const taken = evolveReservation(
      reserved,
      {
        type: 'ReservationTakenOver',
        data: {
          event_uuid: 'u2',
          previous_event_uuid: 'u1',
          reason: 'original_missing',
          at: NOW.toISOString(),
        },
      },
      1n,
    );
    expect(taken).toEqual({ holder: 'u2', since: NOW, revision: 1n });
  });

  it('keys reservations by provider and a hash of the external id', () => {
    expect(reservationStream('codehost', 'abc')).toBe(reservationStream('codehost', 'abc'));
    expect(reservationStream('codehost', 'abc')).not.toBe(reservationStream('payments', 'abc'));
    expect(reservationStream('codehost', 'abc')).not.toContain('abc');
  });
});
