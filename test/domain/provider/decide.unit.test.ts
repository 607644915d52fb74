import { describe, expect, it } from 'vitest';
import { providerDecider } from '../../../src/domain/provider/decide.ts';
import type { ProviderEvent } from '../../../src/domain/provider/events.ts';
import { type ProviderKind, parseProviderName } from '../../../src/domain/provider/names.ts';
import { deciderSpec } from '../../support/decider-spec.ts';

const NOW = new Date('2025-06-01T12:00:00.000Z');

/** Given events on a provider's stream (its kind and configuration fix the initial state). */
const given = (name: string, kind: ProviderKind, configured: boolean, events: ProviderEvent[]) =>
  deciderSpec(providerDecider(name, kind, configured), NOW).given(...events);

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
    expect(given('generic:ci', 'generic', false, [created]).state()).toMatchObject({
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
      .thenThrows('conflict');
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
      .thenNothing();
  });

  it('disables a configured signed provider (enabled by default) and refuses an unconfigured one', () => {
    given('codehost', 'codehost', true, [])
      .when({ type: 'SetProviderEnabled', name: 'codehost', enabled: false, by: 'admin' })
      .thenEvents([{ type: 'ProviderDisabled', data: { name: 'codehost', by: 'admin', at } }]);
    given('payments', 'payments', false, [])
      .when({ type: 'SetProviderEnabled', name: 'payments', enabled: false, by: 'admin' })
      .thenThrows('not_found');
    given('generic:nope', 'generic', false, [])
      .when({ type: 'SetProviderEnabled', name: 'generic:nope', enabled: true, by: 'admin' })
      .thenThrows('not_found');
  });

  it('parses provider names', () => {
    expect(parseProviderName('generic:ci-1')).toMatchObject({ kind: 'generic', suffix: 'ci-1' });
    expect(parseProviderName('broker:orders')).toMatchObject({ kind: 'broker', suffix: 'orders' });
    expect(parseProviderName('generic:Bad')).toBeUndefined();
    expect(parseProviderName('github')).toBeUndefined();
  });
});
