import { describe, expect, it } from 'vitest';
import { endpointDecider } from '../../../src/domain/endpoint/decide.ts';
import type { EndpointEvent } from '../../../src/domain/endpoint/events.ts';
import { type ReleaseHeld, releaseDecider } from '../../../src/domain/quarantine/decide.ts';
import type { QuarantineEvent } from '../../../src/domain/quarantine/events.ts';
import { todoDecider } from '../../../src/domain/todo/decide.ts';
import type { TodoEvent } from '../../../src/domain/todo/events.ts';
import { deciderSpec } from '../../support/decider-spec.ts';

const now = new Date('2026-11-22T10:00:00.000Z');
const spec = deciderSpec(releaseDecider, now);

const vended: EndpointEvent = {
  type: 'EndpointVended',
  data: {
    endpoint_id: 'ep_1',
    slug: 'bot-aaaaaa',
    agent_id: 'ag_1',
    agent_name: 'bot',
    operator: 'admin',
    queues: ['inbox', 'ops'],
    verbs: ['claim'],
    token_hash: 'a'.repeat(64),
    webhook_id: 'wh_1',
    replay_targets: [],
    expires_at: null,
    vended_by: 'admin',
    vended_at: now.toISOString(),
  },
};
const held: TodoEvent = {
  type: 'TodoCreated',
  data: {
    todo_id: 'td_held',
    endpoint_id: 'ep_1',
    slug: 'bot-aaaaaa',
    operator: 'admin',
    queue: 'quarantine',
    kind: 'webhook',
    title: 'deploys: push (event 7)',
    payload: {},
    key: null,
    source: 'webhook:wh_1',
    event_id: 7,
    created_by: 'webhook:wh_1',
    created_at: now.toISOString(),
  },
};

const release = (queue: string, overrides: Partial<ReleaseHeld> = {}): ReleaseHeld => ({
  type: 'ReleaseHeld',
  heldTodoId: 'td_held',
  todoId: 'td_new',
  queue,
  operator: 'admin',
  human: 'alice',
  held: deciderSpec(todoDecider, now).given(held).state(),
  endpoint: deciderSpec(endpointDecider, now).given(vended).state(),
  ...overrides,
});

const released: QuarantineEvent = {
  type: 'QuarantineReleased',
  data: {
    held_todo_id: 'td_held',
    todo_id: 'td_new',
    queue: 'ops',
    endpoint_id: 'ep_1',
    operator: 'admin',
    event_id: 7,
    released_by: 'alice',
    released_at: now.toISOString(),
  },
};

describe('quarantine release: given events, when a release, then events', () => {
  it('given a held delivery, when its owner releases it to a queue of the endpoint, then QuarantineReleased', () => {
    spec.given().when(release('ops')).thenEvents([released]);
  });

  it('given a release, releasing again to that queue changes nothing; to another is a conflict', () => {
    spec
      .given(released)
      .when(release('ops', { todoId: 'td_other' }))
      .thenNothing();
    spec
      .given(released)
      .when(release('inbox'))
      .thenThrows('conflict', /already released to ops/);
  });

  it('another operator, a todo not in quarantine, or no todo at all: not found', () => {
    spec
      .given()
      .when(release('ops', { operator: 'mallory' }))
      .thenThrows('not_found');
    spec
      .given()
      .when(release('ops', { held: { status: 'none' } }))
      .thenThrows('not_found');
    const routed = deciderSpec(todoDecider, now)
      .given({ ...held, data: { ...held.data, queue: 'inbox' } })
      .state();
    spec
      .given()
      .when(release('ops', { held: routed }))
      .thenThrows('not_found');
  });

  it('never back into quarantine nor outside the scope; never for a revoked endpoint', () => {
    spec.given().when(release('quarantine')).thenThrows('bad_request');
    spec.given().when(release('elsewhere')).thenThrows('bad_request');
    const revoked = deciderSpec(endpointDecider, now)
      .given(vended, {
        type: 'EndpointRevoked',
        data: { endpoint_id: 'ep_1', revoked_by: 'admin', revoked_at: now.toISOString() },
      })
      .state();
    expect(revoked.status).toBe('revoked');
    spec
      .given()
      .when(release('ops', { endpoint: revoked }))
      .thenThrows('endpoint_revoked');
  });
});
