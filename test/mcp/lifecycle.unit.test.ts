import { describe, expect, it } from 'vitest';
import type { TodoEvent } from '../../src/domain/todo/events.ts';
import {
  decideClaim,
  decideComplete,
  decideExpire,
  decideFail,
  decideHeartbeat,
  decideRelease,
  endsTodo,
  reopensTodo,
} from '../../src/domain/todo/lease.ts';
import type { DrainEvent } from '../../src/domain/todo/lease-events.ts';
import { evolveTodo, initialTodoState, type TodoState } from '../../src/domain/todo/state.ts';
import { HooklineError } from '../../src/errors.ts';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const caller = { endpointId: 'ep_a', queues: ['inbox'] };

const created: TodoEvent = {
  type: 'TodoCreated',
  data: {
    todo_id: 'td_1',
    endpoint_id: 'ep_a',
    slug: 'a-abcdef',
    operator: 'alice',
    queue: 'inbox',
    kind: 'operator',
    title: 'do it',
    payload: { n: 1 },
    key: null,
    source: 'operator',
    event_id: 1,
    created_by: 'alice',
    created_at: T0.toISOString(),
  },
};

const given = (...events: TodoEvent[]): TodoState => events.reduce(evolveTodo, initialTodoState);
const claimed = (leaseId = 'ls_1', leaseMs = 60_000): DrainEvent =>
  decideClaim({ todoId: 'td_1', leaseId, sessionId: 's1', leaseMs }, caller, given(created), T0)[0]!;

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof HooklineError) return err.code;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('todo lifecycle (given events, when a command, then events)', () => {
  it('given a pending todo, when claimed, then TodoClaimed with a lease running leaseMs', () => {
    const events = decideClaim(
      { todoId: 'td_1', leaseId: 'ls_1', sessionId: 's1', leaseMs: 30_000 },
      caller,
      given(created),
      T0,
    );
    expect(events).toEqual([
      {
        type: 'TodoClaimed',
        data: {
          todo_id: 'td_1',
          endpoint_id: 'ep_a',
          lease_id: 'ls_1',
          session_id: 's1',
          claimed_at: T0.toISOString(),
          lease_expires_at: at(30_000).toISOString(),
        },
      },
    ]);
    expect(given(created, ...events).status).toBe('claimed');
  });

  it('given a claimed todo, a second claim is a conflict until the lease runs out, then expiry + claim', () => {
    const state = given(created, claimed());
    expect(
      refusal(() =>
        decideClaim(
          { todoId: 'td_1', leaseId: 'ls_2', sessionId: null, leaseMs: 1000 },
          caller,
          state,
          at(59_999),
        ),
      ),
    ).toBe('conflict');
    const events = decideClaim(
      { todoId: 'td_1', leaseId: 'ls_2', sessionId: null, leaseMs: 1000 },
      caller,
      state,
      at(60_000),
    );
    expect(events.map((e) => e.type)).toEqual(['TodoLeaseExpired', 'TodoClaimed']);
  });

  it("another endpoint's todo, or one outside the caller's queues, is not_found", () => {
    expect(
      refusal(() =>
        decideClaim(
          { todoId: 'td_1', leaseId: 'x', sessionId: null, leaseMs: 1 },
          { endpointId: 'ep_b', queues: ['inbox'] },
          given(created),
          T0,
        ),
      ),
    ).toBe('not_found');
    expect(
      refusal(() =>
        decideClaim(
          { todoId: 'td_1', leaseId: 'x', sessionId: null, leaseMs: 1 },
          { endpointId: 'ep_a', queues: ['other'] },
          given(created),
          T0,
        ),
      ),
    ).toBe('not_found');
    expect(
      refusal(() =>
        decideClaim(
          { todoId: 'td_1', leaseId: 'x', sessionId: null, leaseMs: 1 },
          caller,
          initialTodoState,
          T0,
        ),
      ),
    ).toBe('not_found');
  });

  it('heartbeat extends the lease; a wrong lease is a conflict; a lapsed one is lease_expired', () => {
    const state = given(created, claimed());
    const [extended] = decideHeartbeat({ leaseId: 'ls_1', leaseMs: 60_000 }, caller, state, at(50_000));
    expect(extended).toMatchObject({
      type: 'TodoLeaseExtended',
      data: { lease_expires_at: at(110_000).toISOString() },
    });
    const after = given(created, claimed(), extended as TodoEvent);
    expect(decideExpire('ls_1', after, at(100_000))).toEqual([]);
    expect(decideExpire('ls_1', after, at(110_000)).map((e) => e.type)).toEqual(['TodoLeaseExpired']);
    expect(refusal(() => decideHeartbeat({ leaseId: 'ls_x', leaseMs: 1 }, caller, state, at(1)))).toBe(
      'conflict',
    );
    expect(refusal(() => decideHeartbeat({ leaseId: 'ls_1', leaseMs: 1 }, caller, state, at(60_000)))).toBe(
      'lease_expired',
    );
  });

  it('release returns it to pending and rings; complete ends it and frees the key', () => {
    const state = given(created, claimed());
    const released = decideRelease({ leaseId: 'ls_1', reason: 'later' }, caller, state, at(1));
    expect(given(created, claimed(), ...released).status).toBe('pending');
    expect(reopensTodo(released)).toBe(true);
    expect(endsTodo(released)).toBe(false);
    expect(
      refusal(() =>
        decideComplete(
          { leaseId: 'ls_1', result: null },
          caller,
          given(created, claimed(), ...released),
          at(2),
        ),
      ),
    ).toBe('lease_expired');

    const done = decideComplete({ leaseId: 'ls_1', result: { ok: true } }, caller, state, at(1));
    const ended = given(created, claimed(), ...done);
    expect(ended.status).toBe('completed');
    expect(endsTodo(done)).toBe(true);
    expect(
      refusal(() =>
        decideClaim({ todoId: 'td_1', leaseId: 'ls_2', sessionId: null, leaseMs: 1 }, caller, ended, at(2)),
      ),
    ).toBe('invalid_state');
  });

  it('a retryable failure returns to pending counting attempts, until the maximum makes it final', () => {
    let history: TodoEvent[] = [created];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const lease = `ls_${attempt}`;
      history.push(
        ...decideClaim(
          { todoId: 'td_1', leaseId: lease, sessionId: null, leaseMs: 1000 },
          caller,
          given(...history),
          at(attempt),
        ),
      );
      const failed = decideFail(
        { leaseId: lease, reason: 'flaky', retryable: true, maxAttempts: 3 },
        caller,
        given(...history),
        at(attempt),
      );
      expect(failed[0]).toMatchObject({ type: 'TodoFailed', data: { attempt, final: attempt === 3 } });
      history = [...history, ...failed];
      expect(given(...history).status).toBe(attempt === 3 ? 'failed' : 'pending');
    }
    const fresh = [created, claimed()];
    const fatal = decideFail(
      { leaseId: 'ls_1', reason: 'bad input', retryable: false, maxAttempts: 3 },
      caller,
      given(...fresh),
      at(1),
    );
    expect(given(...fresh, ...fatal)).toMatchObject({
      status: 'failed',
      attempts: 1,
      lastFailure: 'bad input',
    });
  });
});
