import { describe, expect, it } from 'vitest';
import { decideVend } from '../../../src/domain/endpoint/decide.ts';
import type { EndpointEvent } from '../../../src/domain/endpoint/events.ts';
import {
  type EndpointState,
  evolveEndpoint,
  initialEndpointState,
} from '../../../src/domain/endpoint/state.ts';
import {
  decideCreateTodo,
  decideKey,
  decidePushTarget,
  decideReleaseKey,
} from '../../../src/domain/todo/decide.ts';
import type { TodoEvent, TodoKeyEvent } from '../../../src/domain/todo/events.ts';
import { todoKeySchema, todoTitleSchema } from '../../../src/domain/todo/input.ts';
import {
  evolveTodo,
  evolveTodoKey,
  initialTodoKeyState,
  initialTodoState,
  type TodoKeyState,
  type TodoState,
} from '../../../src/domain/todo/state.ts';
import { HooklineError } from '../../../src/errors.ts';

const now = new Date('2026-11-22T10:00:00.000Z');
const later = (ms: number) => new Date(now.getTime() + ms);

function endpointWith(
  queues: string[],
  extra: EndpointEvent[] = [],
  expiresAt: Date | null = null,
): EndpointState {
  const [vended] = decideVend(
    {
      endpointId: 'ep_aaaaaaaaaaaaaaaaaaaa',
      slug: 'bot-abcdef',
      agentId: 'ag_aaaaaaaaaaaaaaaaaaaa',
      agentName: 'bot',
      operator: 'admin',
      human: 'admin',
      queue: queues[0] ?? 'inbox',
      verbs: ['claim'],
      tokenHash: 'b'.repeat(64),
      webhookId: 'wh_aaaaaaaaaaaaaaaaaaaa',
      replayTargets: [],
      expiresAt,
    },
    initialEndpointState,
    now,
  );
  if (vended?.type !== 'EndpointVended') throw new Error('no vend');
  const widened: EndpointEvent = { ...vended, data: { ...vended.data, queues } };
  return [widened, ...extra].reduce(evolveEndpoint, initialEndpointState);
}

function refusal(fn: () => unknown): HooklineError {
  try {
    fn();
  } catch (err) {
    if (err instanceof HooklineError) return err;
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
    expect(refusal(() => decidePushTarget(ep, 'admin', undefined, now)).status).toBe(400);
    expect(refusal(() => decidePushTarget(ep, 'admin', 'elsewhere', now)).status).toBe(400);
    expect(decidePushTarget(ep, 'admin', 'ops', now).queue).toBe('ops');
  });

  it('a queue outside the scope of a single-queue endpoint is refused', () => {
    expect(
      refusal(() => decidePushTarget(endpointWith(['inbox']), 'admin', 'ops', now)).extensions.field,
    ).toBe('queue');
  });

  it('unknown and foreign endpoints answer the same 404', () => {
    const foreign = refusal(() => decidePushTarget(endpointWith(['inbox']), 'mallory', undefined, now));
    const unknown = refusal(() => decidePushTarget(initialEndpointState, 'mallory', undefined, now));
    expect([foreign.status, unknown.status]).toEqual([404, 404]);
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
    expect(refusal(() => decidePushTarget(revoked, 'admin', undefined, now)).status).toBe(409);
    const expiring = endpointWith(['inbox'], [], later(1000));
    expect(decidePushTarget(expiring, 'admin', undefined, now).queue).toBe('inbox');
    expect(refusal(() => decidePushTarget(expiring, 'admin', undefined, later(1000))).status).toBe(409);
  });
});

describe('todo push: the idempotency key', () => {
  const command = { todoId: 'td_new', endpointId: 'ep_x' };
  const reserved: TodoKeyState = [
    {
      type: 'TodoKeyReserved',
      data: { todo_id: 'td_old', endpoint_id: 'ep_x', reserved_at: now.toISOString() },
    },
  ].reduce<TodoKeyState>((s, e) => evolveTodoKey(s, e as TodoKeyEvent), initialTodoKeyState);

  const created: TodoState = (
    decideCreateTodo(
      {
        todoId: 'td_old',
        endpoint: endpointWith(['inbox']) as Extract<EndpointState, { status: 'active' }>,
        queue: 'inbox',
        kind: 'operator',
        title: 'look at this',
        payload: { a: 1 },
        key: 'k',
        source: 'operator',
        eventId: 7,
        human: 'admin',
      },
      initialTodoState,
      now,
    ) as TodoEvent[]
  ).reduce(evolveTodo, initialTodoState);

  it('given a free key, when pushed, then it is reserved for the new todo', () => {
    expect(decideKey(initialTodoKeyState, undefined, command, now, 30_000)).toEqual({
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
    const ended = { ...created, status: 'completed' } as TodoState;
    expect(decideKey(reserved, ended, command, now, 30_000).action).toBe('reserve');
  });

  it('given a key reserved but its todo not yet written, when pushed, then wait; past the stale time take it over', () => {
    expect(decideKey(reserved, initialTodoState, command, later(29_999), 30_000)).toEqual({ action: 'wait' });
    expect(decideKey(reserved, initialTodoState, command, later(30_000), 30_000).action).toBe('reserve');
  });

  it('releases only the holder the release names', () => {
    expect(decideReleaseKey(reserved, 'td_other', now)).toEqual([]);
    expect(decideReleaseKey(reserved, 'td_old', now)).toEqual([
      { type: 'TodoKeyReleased', data: { todo_id: 'td_old', released_at: now.toISOString() } },
    ]);
    expect(decideReleaseKey(initialTodoKeyState, 'td_old', now)).toEqual([]);
  });

  it('given a created todo, when created again, then it conflicts', () => {
    expect(() =>
      decideCreateTodo(
        {
          todoId: 'td_old',
          endpoint: endpointWith(['inbox']) as Extract<EndpointState, { status: 'active' }>,
          queue: 'inbox',
          kind: 'operator',
          title: 't',
          payload: null,
          key: null,
          source: 'operator',
          eventId: 8,
          human: 'admin',
        },
        created,
        now,
      ),
    ).toThrow(HooklineError);
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
