import { describe, expect, it } from 'vitest';
import {
  type CreateWebhook,
  type RoutingChange,
  decideDisposition as settle,
  webhookDecider,
} from '../../../src/domain/webhook/decide.ts';
import type { WebhookEvent } from '../../../src/domain/webhook/events.ts';
import { activeSecrets, defaultQueue } from '../../../src/domain/webhook/state.ts';
import { deciderSpec } from '../../support/decider-spec.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const owner = { endpointId: 'ep_owner', slug: 'owner-abc123' };
const other = { endpointId: 'ep_other', slug: 'other-def456' };

const created: WebhookEvent = {
  type: 'WebhookCreated',
  data: {
    webhook_id: 'wh_1',
    endpoint_id: 'ep_owner',
    operator: 'alice',
    name: 'deploys',
    queue: 'inbox',
    trust_mode: 'token',
    token_hash: 'a'.repeat(64),
    created_by: 'alice',
    created_at: now.toISOString(),
  },
};

/** Given events, when a rule or route change (by a caller), then events: the decider specification. */
function given(...events: WebhookEvent[]) {
  const spec = deciderSpec(webhookDecider, now).given(...events);
  return {
    when: (change: RoutingChange, caller = owner) => {
      const w = spec.when({ type: 'ChangeRouting', caller, change });
      return {
        thenEvents: w.thenEvents,
        thenRefused: (code: 'bad_request' | 'not_found' | 'conflict') => w.thenThrows(code),
        state: w.stateAfter,
      };
    },
  };
}

const stamp = { webhook_id: 'wh_1', by: 'endpoint:owner-abc123', at: now.toISOString() };
const r = (id: string, source = `(d) => 'continue'`) => ({ id, source });

describe('webhook rules and routes: given events, when a command, then events', () => {
  it('set_rules records the list at version 1', () => {
    given(created)
      .when({ kind: 'set_rules', rules: [r('a'), r('b')] })
      .thenEvents([{ type: 'WebhookRulesSet', data: { ...stamp, version: 1, rules: [r('a'), r('b')] } }]);
  });

  it('add, update, move and remove each bump the version and reshape the list', () => {
    const set: WebhookEvent = {
      type: 'WebhookRulesSet',
      data: { ...stamp, version: 1, rules: [r('a'), r('b')] },
    };
    const added = given(created, set).when({ kind: 'add_rule', rule: r('c'), position: 0 });
    added.thenEvents([
      { type: 'WebhookRuleAdded', data: { ...stamp, version: 2, rule: r('c'), position: 0 } },
    ]);
    expect(added.state().rules.map((x) => x.id)).toEqual(['c', 'a', 'b']);

    const moved = given(created, set).when({ kind: 'move_rule', ruleId: 'a', position: 1 });
    moved.thenEvents([
      { type: 'WebhookRuleMoved', data: { ...stamp, version: 2, rule_id: 'a', position: 1 } },
    ]);
    expect(moved.state().rules.map((x) => x.id)).toEqual(['b', 'a']);

    const updated = given(created, set).when({
      kind: 'update_rule',
      ruleId: 'b',
      source: '() => ({ drop: true })',
    });
    expect(updated.state().rules[1]).toEqual({ id: 'b', source: '() => ({ drop: true })' });
    expect(updated.state().version).toBe(2);

    const removed = given(created, set).when({ kind: 'remove_rule', ruleId: 'a' });
    removed.thenEvents([{ type: 'WebhookRuleRemoved', data: { ...stamp, version: 2, rule_id: 'a' } }]);
    expect(removed.state().rules.map((x) => x.id)).toEqual(['b']);
  });

  it('refuses repeated ids, unknown rules, bad positions and over-long lists', () => {
    given(created)
      .when({ kind: 'set_rules', rules: [r('a'), r('a')] })
      .thenRefused('bad_request');
    given(created)
      .when({ kind: 'set_rules', rules: [r('')] })
      .thenRefused('bad_request');
    given(created)
      .when({ kind: 'set_rules', rules: Array.from({ length: 51 }, (_, i) => r(`r${i}`)) })
      .thenRefused('bad_request');
    given(created).when({ kind: 'remove_rule', ruleId: 'nope' }).thenRefused('not_found');
    given(created)
      .when({ kind: 'add_rule', rule: r('a'), position: 3 })
      .thenRefused('bad_request');
  });

  it('answers not_found to any endpoint but the owner, and for an unknown webhook (release 0.5.0)', () => {
    given(created)
      .when({ kind: 'set_rules', rules: [r('a')] }, other)
      .thenRefused('not_found');
    given(created).when({ kind: 'remove_route', routeId: 'x' }, other).thenRefused('not_found');
    given()
      .when({ kind: 'set_rules', rules: [r('a')] })
      .thenRefused('not_found');
  });

  it('routes: only a queue the owner drains, never quarantine; the first matching route is the default', () => {
    const route = { route_id: 'rt_1', queue: 'ci', event_type: 'push' };
    given(created)
      .when({ kind: 'add_route', route, ownerQueues: ['inbox', 'ci'] })
      .thenEvents([{ type: 'WebhookRouteAdded', data: { ...stamp, ...route } }]);
    given(created)
      .when({
        kind: 'add_route',
        route: { ...route, queue: 'quarantine' },
        ownerQueues: ['inbox', 'quarantine'],
      })
      .thenRefused('bad_request');
    given(created)
      .when({ kind: 'add_route', route: { ...route, queue: 'ops' }, ownerQueues: ['inbox'] })
      .thenRefused('bad_request');
    const state = given(created)
      .when({ kind: 'add_route', route, ownerQueues: ['inbox', 'ci'] })
      .state();
    expect(defaultQueue(state, 'push')).toBe('ci');
    expect(defaultQueue(state, 'ping')).toBe('inbox');
    const removed = given(created, { type: 'WebhookRouteAdded', data: { ...stamp, ...route } })
      .when({ kind: 'remove_route', routeId: 'rt_1' })
      .state();
    expect(removed.routes).toEqual([]);
  });
});

describe('settle: an outcome as a queue and a disposition (fail closed)', () => {
  const rule = { id: 'a', index: 0 };
  it('routes only to a queue the owner drains; anything else faults into quarantine', () => {
    expect(settle({ kind: 'routed', queue: 'ci', rule }, 'inbox', ['inbox', 'ci'], 3)).toMatchObject({
      queue: 'ci',
      disposition: { disposition: 'routed', rule, rulesVersion: 3 },
    });
    expect(settle({ kind: 'routed', queue: 'ops', rule }, 'inbox', ['inbox'], 3)).toMatchObject({
      queue: 'quarantine',
      disposition: { disposition: 'faulted', reason: 'scope' },
    });
  });
  it('drop: no queue; held and faulted: quarantine; default: the fallback queue', () => {
    expect(settle({ kind: 'dropped', rule }, 'inbox', ['inbox'], 1).queue).toBeNull();
    expect(settle({ kind: 'held', rule }, 'inbox', ['inbox'], 1)).toMatchObject({
      queue: 'quarantine',
      disposition: { disposition: 'held' },
    });
    expect(
      settle({ kind: 'faulted', rule, reason: 'timeout', message: 'deadline' }, 'inbox', ['inbox'], 1),
    ).toMatchObject({
      queue: 'quarantine',
      disposition: { disposition: 'faulted', reason: 'timeout', message: 'deadline' },
    });
    expect(settle({ kind: 'default' }, 'inbox', ['inbox'], 1)).toMatchObject({
      queue: 'inbox',
      disposition: { disposition: 'routed', rule: null },
    });
  });
});

describe('webhook created with an endpoint or by create_webhook', () => {
  const spec = deciderSpec(webhookDecider, now);
  const create: CreateWebhook = {
    type: 'CreateWebhook',
    webhookId: 'wh_x',
    endpointId: 'ep_x',
    operator: 'admin',
    human: 'admin',
    name: 'bot-abcdef',
    queue: 'inbox',
    tokenHash: 'c'.repeat(64),
  };

  it('given nothing, when created, then WebhookCreated with token trust and only the hash', () => {
    const events = spec.given().when(create).events();
    expect(events).toHaveLength(1);
    expect(events[0]?.data).toMatchObject({
      trust_mode: 'token',
      token_hash: 'c'.repeat(64),
      queue: 'inbox',
    });
  });

  it('with a signing secret, records it sealed in the same decision', () => {
    const events = spec
      .given()
      .when({ ...create, signing: { scheme: 'standard-webhooks', secretSealed: 'sealed', required: true } })
      .events();
    expect(events.map((e) => e.type)).toEqual(['WebhookCreated', 'WebhookSigningSecretSet']);
    expect(spec.given(...events).state().signing).toEqual({
      scheme: 'standard-webhooks',
      secretSealed: 'sealed',
      required: true,
      previous: null,
    });
  });

  it('refuses anything but a SHA-256 hex as the stored token, and a second creation', () => {
    expect(() =>
      spec
        .given()
        .when({ ...create, tokenHash: 'plain' })
        .events(),
    ).toThrow();
    spec.given(created).when(create).thenThrows('conflict');
  });
});

describe('webhook: secret rotation (given events, when a command, then events)', () => {
  const owner = { endpointId: 'ep_owner', slug: 'owner-aaaaaa' };
  const T = new Date('2026-11-25T01:00:00.000Z');
  const rotation = deciderSpec(webhookDecider, T);
  const createdSigned = rotation
    .given()
    .when({
      type: 'CreateWebhook',
      webhookId: 'wh_r',
      endpointId: owner.endpointId,
      operator: 'admin',
      human: 'admin',
      name: 'gh',
      queue: 'inbox',
      tokenHash: 'd'.repeat(64),
      signing: { scheme: 'codehost', secretSealed: 'old', required: true },
    })
    .events();
  const later = new Date(T.getTime() + 86_400_000);
  const rotate = {
    type: 'ChangeSecret',
    caller: owner,
    change: { kind: 'rotate', secretSealed: 'new', previousExpiresAt: later },
  } as const;

  it('given a codehost webhook, when rotated, then both secrets verify until the previous expires', () => {
    const when = rotation.given(...createdSigned).when(rotate);
    when.thenEvents([
      {
        type: 'WebhookSecretRotated',
        data: {
          webhook_id: 'wh_r',
          secret_sealed: 'new',
          previous_expires_at: later.toISOString(),
          by: 'endpoint:owner-aaaaaa',
          at: T.toISOString(),
        },
      },
    ]);
    const signing = when.stateAfter().signing!;
    expect(signing.scheme).toBe('codehost');
    expect(activeSecrets(signing, T)).toEqual(['new', 'old']);
    expect(activeSecrets(signing, later)).toEqual(['new']);
  });

  it('given a rotation, when the previous is retired, then only the new one verifies; retiring again changes nothing', () => {
    const rotated = rotation
      .given(...createdSigned)
      .when(rotate)
      .events();
    const retire = { type: 'ChangeSecret', caller: owner, change: { kind: 'retire' } } as const;
    const when = rotation.given(...createdSigned, ...rotated).when(retire);
    expect(when.events().map((e) => e.type)).toEqual(['WebhookPreviousSecretRetired']);
    expect(activeSecrets(when.stateAfter().signing!, T)).toEqual(['new']);
    rotation
      .given(...createdSigned, ...rotated, ...when.events())
      .when(retire)
      .thenNothing();
  });

  it('another endpoint hears not_found; a webhook without a secret cannot rotate', () => {
    rotation
      .given(...createdSigned)
      .when({ ...rotate, caller: { endpointId: 'ep_other', slug: 'other-bbbbbb' } })
      .thenThrows('not_found');
    const unsigned = rotation
      .given()
      .when({
        type: 'CreateWebhook',
        webhookId: 'wh_u',
        endpointId: owner.endpointId,
        operator: 'admin',
        human: 'admin',
        name: 'plain',
        queue: 'inbox',
        tokenHash: 'e'.repeat(64),
      })
      .events();
    rotation
      .given(...unsigned)
      .when(rotate)
      .thenThrows('bad_request', /scheme none/);
  });
});
