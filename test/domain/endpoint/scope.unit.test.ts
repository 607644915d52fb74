import { describe, expect, it } from 'vitest';
import {
  type ChangeEndpointScope,
  endpointDecider,
  type VendEndpoint,
} from '../../../src/domain/endpoint/decide.ts';
import type { EndpointEvent } from '../../../src/domain/endpoint/events.ts';
import { errorCatalog } from '../../../src/errors.ts';
import { deciderSpec } from '../../support/decider-spec.ts';

const now = new Date('2026-11-25T01:00:00.000Z');
const spec = deciderSpec(endpointDecider, now);
const status = (code: keyof typeof errorCatalog) => errorCatalog[code].status;

const vend: VendEndpoint = {
  type: 'VendEndpoint',
  endpointId: 'ep_aaaaaaaaaaaaaaaaaaaa',
  slug: 'deploy-bot-abcdef',
  agentId: 'ag_aaaaaaaaaaaaaaaaaaaa',
  agentName: 'Deploy Bot',
  operator: 'admin',
  human: 'admin',
  queues: ['inbox', 'deploys'],
  verbs: ['list_todos', 'claim_next', 'complete'],
  tokenHash: 'a'.repeat(64),
  webhookId: 'wh_aaaaaaaaaaaaaaaaaaaa',
  replayTargets: [],
  expiresAt: null,
};
const vended = spec.given().when(vend).events()[0] as EndpointEvent;

const change = (c: Partial<ChangeEndpointScope>): ChangeEndpointScope => ({
  type: 'ChangeEndpointScope',
  operator: 'admin',
  human: 'alice',
  liveTodos: {},
  ...c,
});

describe('endpoint: vend with several queues', () => {
  it('given nothing, when vended with two queues, then EndpointVended carries both, in order', () => {
    expect(vended).toMatchObject({ type: 'EndpointVended', data: { queues: ['inbox', 'deploys'] } });
  });

  it('refuses 17 queues, a queue named twice and quarantine among several (field queues)', () => {
    const many = Array.from({ length: 17 }, (_, i) => `q${i}`);
    for (const queues of [many, ['inbox', 'inbox'], ['inbox', 'quarantine'], []]) {
      const refused = spec
        .given()
        .when({ ...vend, queues })
        .thenThrows('bad_request');
      expect(status(refused.code)).toBe(400);
      expect(refused.extensions.field).toBe('queues');
    }
    spec
      .given()
      .when({ ...vend, queues: many.slice(0, 16) })
      .events();
  });
});

describe('endpoint: change its scope', () => {
  it('given an endpoint, when its owner adds a queue, then EndpointScopeChanged and the state drains it', () => {
    const when = spec.given(vended).when(change({ queues: ['inbox', 'deploys', 'alerts'] }));
    when.thenEvents([
      {
        type: 'EndpointScopeChanged',
        data: {
          endpoint_id: vend.endpointId,
          queues: ['inbox', 'deploys', 'alerts'],
          verbs: ['list_todos', 'claim_next', 'complete'],
          removed_queues: [],
          moved_to: null,
          changed_by: 'alice',
          changed_at: now.toISOString(),
        },
      },
    ]);
    const after = when.stateAfter();
    expect(after.status === 'active' && after.queues).toEqual(['inbox', 'deploys', 'alerts']);
  });

  it('given an empty queue, when removed, then the change records it as removed', () => {
    const [event] = spec
      .given(vended)
      .when(change({ queues: ['inbox'] }))
      .events();
    expect(event).toMatchObject({ data: { queues: ['inbox'], removed_queues: ['deploys'], moved_to: null } });
  });

  it('given pending todos on a queue, when removed without move_to, then 409 naming it and the count', () => {
    const refused = spec
      .given(vended)
      .when(change({ queues: ['inbox'], liveTodos: { deploys: 3 } }))
      .thenThrows('conflict', /deploys \(3\).*move_to/);
    expect(status(refused.code)).toBe(409);
  });

  it('given pending todos, when removed with move_to a remaining queue, then the change names it', () => {
    const [event] = spec
      .given(vended)
      .when(change({ queues: ['inbox'], liveTodos: { deploys: 3 }, moveTo: 'inbox' }))
      .events();
    expect(event).toMatchObject({ data: { removed_queues: ['deploys'], moved_to: 'inbox' } });
  });

  it('refuses move_to outside the new queues, the removed queue itself included', () => {
    for (const moveTo of ['deploys', 'elsewhere']) {
      spec
        .given(vended)
        .when(change({ queues: ['inbox'], liveTodos: { deploys: 1 }, moveTo }))
        .thenThrows('bad_request', /move_to/);
    }
  });

  it('refuses quarantine and more than 16 queues in a change', () => {
    spec
      .given(vended)
      .when(change({ queues: ['inbox', 'quarantine'] }))
      .thenThrows('bad_request', /reserved/);
    spec
      .given(vended)
      .when(change({ queues: Array.from({ length: 17 }, (_, i) => `q${i}`) }))
      .thenThrows('bad_request', /1 to 16/);
  });

  it('narrows verbs; a verb the endpoint does not hold is refused by name', () => {
    const [event] = spec
      .given(vended)
      .when(change({ verbs: ['claim_next', 'complete'] }))
      .events();
    expect(event).toMatchObject({
      data: { verbs: ['claim_next', 'complete'], queues: ['inbox', 'deploys'] },
    });
    spec
      .given(vended)
      .when(change({ verbs: ['claim_next', 'create_webhook'] }))
      .thenThrows('bad_request', /create_webhook/);
  });

  it('changes nothing when the scope is already as asked', () => {
    spec
      .given(vended)
      .when(change({ queues: ['inbox', 'deploys'] }))
      .thenNothing();
  });

  it('another operator hears not found; a revoked endpoint is refused', () => {
    spec
      .given(vended)
      .when(change({ operator: 'mallory', queues: ['inbox'] }))
      .thenThrows('not_found');
    const revoked: EndpointEvent = {
      type: 'EndpointRevoked',
      data: { endpoint_id: vend.endpointId, revoked_by: 'admin', revoked_at: now.toISOString() },
    };
    spec
      .given(vended, revoked)
      .when(change({ queues: ['inbox'] }))
      .thenThrows('endpoint_revoked');
  });
});
