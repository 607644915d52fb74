import { describe, expect, it } from 'vitest';
import { endpointDecider } from '../../../src/domain/endpoint/decide.ts';
import type { EndpointEvent } from '../../../src/domain/endpoint/events.ts';
import { type EndpointFacts, type EndpointState, factsOf } from '../../../src/domain/endpoint/state.ts';
import { DomainError } from '../../../src/domain/errors.ts';
import {
  type CreateTodo,
  decideKey,
  decidePushTarget,
  todoDecider,
  todoKeyDecider,
} from '../../../src/domain/todo/decide.ts';
import type { TodoEvent, TodoKeyEvent } from '../../../src/domain/todo/events.ts';
import { todoKeySchema, todoTitleSchema } from '../../../src/domain/todo/input.ts';
import type { TodoState } from '../../../src/domain/todo/state.ts';
import { errorCatalog } from '../../../src/errors.ts';
import { deciderSpec } from '../../support/decider-spec.ts';

const now = new Date('2026-11-22T10:00:00.000Z');
const later = (ms: number) => new Date(now.getTime() + ms);

function endpointWith(
  queues: string[],
  extra: EndpointEvent[] = [],
  expiresAt: Date | null = null,
): EndpointState {
  const [vended] = deciderSpec(endpointDecider, now)
    .given()
    .when({
      type: 'VendEndpoint',
      endpointId: 'ep_aaaaaaaaaaaaaaaaaaaa',
      slug: 'bot-abcdef',
      agentId: 'ag_aaaaaaaaaaaaaaaaaaaa',
      agentName: 'bot',
      operator: 'admin',
      human: 'admin',
      queues: queues.length > 0 ? queues : ['inbox'],
      verbs: ['claim'],
      tokenHash: 'b'.repeat(64),
      webhookId: 'wh_aaaaaaaaaaaaaaaaaaaa',
      replayTargets: [],
      expiresAt,
    })
    .events();
  if (vended?.type !== 'EndpointVended') throw new Error('no vend');
  const scoped: EndpointEvent = { ...vended, data: { ...vended.data, queues } };
  return deciderSpec(endpointDecider, now)
    .given(scoped, ...extra)
    .state();
}

const facts = (state: EndpointState): EndpointFacts => {
  if (state.status === 'none') throw new Error('no endpoint');
  return factsOf(state);
};

/** The HTTP status a refusal maps to (the error catalogue). */
const statusOf = (e: DomainError): number => errorCatalog[e.code].status;

function refusal(fn: () => unknown): DomainError {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('todo push: where it lands', () => {
  it('a single-queue endpoint takes a push without a queue onto that queue', () => {
    expect(decidePushTarget(endpointWith(['inbox']), 'admin', undefined, now).queue).toBe('inbox');
  });

  it('a multi-queue endpoint needs the queue named, and only a vended one', () => {
    const ep = endpointWith(['inbox', 'ops']);
    expect(statusOf(refusal(() => decidePushTarget(ep, 'admin', undefined, now)))).toBe(400);
    expect(statusOf(refusal(() => decidePushTarget(ep, 'admin', 'elsewhere', now)))).toBe(400);
    expect(decidePushTarget(ep, 'admin', 'ops', now).queue).toBe('ops');
  });

  it('a queue outside the scope of a single-queue endpoint is refused', () => {
    expect(
      refusal(() => decidePushTarget(endpointWith(['inbox']), 'admin', 'ops', now)).extensions.field,
    ).toBe('queue');
  });

  it('unknown and foreign endpoints answer the same 404', () => {
    const foreign = refusal(() => decidePushTarget(endpointWith(['inbox']), 'mallory', undefined, now));
    const unknown = refusal(() => decidePushTarget({ status: 'none' }, 'mallory', undefined, now));
    expect([statusOf(foreign), statusOf(unknown)]).toEqual([404, 404]);
    expect(foreign.message).toBe(unknown.message);
  });

  it('a revoked or expired endpoint answers 409', () => {
    const revoked = endpointWith(
      ['inbox'],
      [
        {
          type: 'EndpointRevoked',
          data: {
            endpoint_id: 'ep_aaaaaaaaaaaaaaaaaaaa',
            revoked_by: 'admin',
            revoked_at: now.toISOString(),
          },
        },
      ],
    );
    expect(statusOf(refusal(() => decidePushTarget(revoked, 'admin', undefined, now)))).toBe(409);
    const expiring = endpointWith(['inbox'], [], later(1000));
    expect(decidePushTarget(expiring, 'admin', undefined, now).queue).toBe('inbox');
    expect(statusOf(refusal(() => decidePushTarget(expiring, 'admin', undefined, later(1000))))).toBe(409);
  });
});

describe('todo push: the idempotency key', () => {
  const command = { todoId: 'td_new', endpointId: 'ep_x' };
  const reservedOld: TodoKeyEvent = {
    type: 'TodoKeyReserved',
    data: { todo_id: 'td_old', endpoint_id: 'ep_x', reserved_at: now.toISOString() },
  };
  const keys = deciderSpec(todoKeyDecider, now);
  const reserved = keys.given(reservedOld).state();
  const todos = deciderSpec(todoDecider, now);
  const create = (todoId: string, eventId: number): CreateTodo => ({
    type: 'CreateTodo',
    todoId,
    endpoint: facts(endpointWith(['inbox'])),
    queue: 'inbox',
    kind: 'operator',
    title: 'look at this',
    payload: { a: 1 },
    key: 'k',
    source: 'operator',
    eventId,
    human: 'admin',
  });
  const createdEvents: TodoEvent[] = todos.given().when(create('td_old', 7)).events();
  const created: TodoState = todos.given(...createdEvents).state();

  it('given nothing, when a todo is created, then TodoCreated with the endpoint and the key', () => {
    expect(createdEvents).toEqual([
      {
        type: 'TodoCreated',
        data: {
          todo_id: 'td_old',
          endpoint_id: 'ep_aaaaaaaaaaaaaaaaaaaa',
          slug: 'bot-abcdef',
          operator: 'admin',
          queue: 'inbox',
          kind: 'operator',
          title: 'look at this',
          payload: { a: 1 },
          key: 'k',
          source: 'operator',
          event_id: 7,
          created_by: 'admin',
          created_at: now.toISOString(),
        },
      },
    ]);
  });

  it('given a free key, when pushed, then it is reserved for the new todo', () => {
    expect(decideKey(keys.given().state(), undefined, command, now, 30_000)).toEqual({
      action: 'reserve',
      event: {
        type: 'TodoKeyReserved',
        data: { todo_id: 'td_new', endpoint_id: 'ep_x', reserved_at: now.toISOString() },
      },
    });
  });

  it('given a key held by a live todo, when pushed, then the existing todo answers', () => {
    expect(created.status).toBe('pending');
    expect(decideKey(reserved, created, command, now, 30_000)).toEqual({
      action: 'existing',
      todoId: 'td_old',
    });
  });

  it('given a key whose todo has ended, when pushed, then the key is reserved again', () => {
    const ended: TodoState = { ...created, status: 'completed' } as TodoState;
    expect(decideKey(reserved, ended, command, now, 30_000).action).toBe('reserve');
  });

  it('given a key reserved but its todo not yet written, when pushed, then wait; past the stale time take it over', () => {
    const none = todos.given().state();
    expect(decideKey(reserved, none, command, later(29_999), 30_000)).toEqual({ action: 'wait' });
    expect(decideKey(reserved, none, command, later(30_000), 30_000).action).toBe('reserve');
  });

  it('releases only the holder the release names', () => {
    keys.given(reservedOld).when({ type: 'ReleaseKey', todoId: 'td_other' }).thenNothing();
    keys
      .given(reservedOld)
      .when({ type: 'ReleaseKey', todoId: 'td_old' })
      .thenEvents([{ type: 'TodoKeyReleased', data: { todo_id: 'td_old', released_at: now.toISOString() } }]);
    keys.given().when({ type: 'ReleaseKey', todoId: 'td_old' }).thenNothing();
  });

  it('given a created todo, when created again, then it conflicts', () => {
    todos
      .given(...createdEvents)
      .when(create('td_old', 8))
      .thenThrows('conflict');
  });
});

describe('todo input', () => {
  it('titles are one line of 1 to 200 characters, counted as a person counts them', () => {
    expect(todoTitleSchema.safeParse('fix the build').success).toBe(true);
    expect(todoTitleSchema.safeParse('').success).toBe(false);
    expect(todoTitleSchema.safeParse('   ').success).toBe(false);
    expect(todoTitleSchema.safeParse('two\nlines').success).toBe(false);
    expect(todoTitleSchema.safeParse('x'.repeat(200)).success).toBe(true);
    expect(todoTitleSchema.safeParse('x'.repeat(201)).success).toBe(false);
    expect(todoTitleSchema.safeParse('🦀'.repeat(200)).success).toBe(true);
  });

  it('keys are at most 256 characters', () => {
    expect(todoKeySchema.safeParse('k'.repeat(256)).success).toBe(true);
    expect(todoKeySchema.safeParse('k'.repeat(257)).success).toBe(false);
    expect(todoKeySchema.safeParse('').success).toBe(false);
  });
});
