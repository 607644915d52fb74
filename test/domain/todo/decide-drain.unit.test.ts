import { describe, expect, it } from 'vitest';
import { endsTodo, reopensTodo, type TodoCommand, todoDecider } from '../../../src/domain/todo/decide.ts';
import type { DrainEvent, TodoEvent } from '../../../src/domain/todo/events.ts';
import { deciderSpec } from '../../support/decider-spec.ts';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);
const caller = { endpointId: 'ep_a', queues: ['inbox'] };
const spec = deciderSpec(todoDecider, T0);

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

const claim = (leaseId: string, leaseMs: number, who = caller): TodoCommand => ({
  type: 'Claim',
  caller: who,
  todoId: 'td_1',
  leaseId,
  sessionId: leaseId === 'ls_1' ? 's1' : null,
  leaseMs,
});
const claimed = (leaseId = 'ls_1', leaseMs = 60_000): TodoEvent =>
  spec.given(created).when(claim(leaseId, leaseMs)).events()[0]!;
const drain = (events: readonly TodoEvent[]): DrainEvent[] =>
  events.flatMap((e) => (e.type === 'TodoCreated' || e.type === 'TodoMoved' ? [] : [e]));

describe('todo lifecycle (given events, when a command, then events)', () => {
  it('given a pending todo, when claimed, then TodoClaimed with a lease running leaseMs', () => {
    spec
      .given(created)
      .when(claim('ls_1', 30_000))
      .thenEvents([
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
    expect(spec.given(created).when(claim('ls_1', 30_000)).stateAfter().status).toBe('claimed');
  });

  it('given a claimed todo, a second claim is a conflict until the lease runs out, then expiry + claim', () => {
    spec.given(created, claimed()).when(claim('ls_2', 1000), at(59_999)).thenThrows('conflict');
    const events = spec.given(created, claimed()).when(claim('ls_2', 1000), at(60_000)).events();
    expect(events.map((e) => e.type)).toEqual(['TodoLeaseExpired', 'TodoClaimed']);
  });

  it("another endpoint's todo, or one outside the caller's queues, is not_found", () => {
    spec
      .given(created)
      .when(claim('x', 1, { endpointId: 'ep_b', queues: ['inbox'] }))
      .thenThrows('not_found');
    spec
      .given(created)
      .when(claim('x', 1, { endpointId: 'ep_a', queues: ['other'] }))
      .thenThrows('not_found');
    spec.given().when(claim('x', 1)).thenThrows('not_found');
  });

  it('heartbeat extends the lease; a wrong lease is a conflict; a lapsed one is lease_expired', () => {
    const heartbeat = (leaseId: string, leaseMs: number): TodoCommand => ({
      type: 'Heartbeat',
      caller,
      leaseId,
      leaseMs,
    });
    const [extended] = spec.given(created, claimed()).when(heartbeat('ls_1', 60_000), at(50_000)).events();
    expect(extended).toMatchObject({
      type: 'TodoLeaseExtended',
      data: { lease_expires_at: at(110_000).toISOString() },
    });
    const expire: TodoCommand = { type: 'ExpireLease', leaseId: 'ls_1' };
    spec.given(created, claimed(), extended!).when(expire, at(100_000)).thenNothing();
    expect(
      spec
        .given(created, claimed(), extended!)
        .when(expire, at(110_000))
        .events()
        .map((e) => e.type),
    ).toEqual(['TodoLeaseExpired']);
    spec.given(created, claimed()).when(heartbeat('ls_x', 1), at(1)).thenThrows('conflict');
    spec.given(created, claimed()).when(heartbeat('ls_1', 1), at(60_000)).thenThrows('lease_expired');
  });

  it('release returns it to pending and rings; complete ends it and frees the key', () => {
    const release: TodoCommand = { type: 'Release', caller, leaseId: 'ls_1', reason: 'later' };
    const released = spec.given(created, claimed()).when(release, at(1)).events();
    expect(spec.given(created, claimed(), ...released).state().status).toBe('pending');
    expect(reopensTodo(drain(released))).toBe(true);
    expect(endsTodo(drain(released))).toBe(false);
    const complete = (result: unknown): TodoCommand => ({
      type: 'Complete',
      caller,
      leaseId: 'ls_1',
      result,
    });
    spec
      .given(created, claimed(), ...released)
      .when(complete(null), at(2))
      .thenThrows('lease_expired');

    const done = spec
      .given(created, claimed())
      .when(complete({ ok: true }), at(1))
      .events();
    expect(spec.given(created, claimed(), ...done).state().status).toBe('completed');
    expect(endsTodo(drain(done))).toBe(true);
    spec
      .given(created, claimed(), ...done)
      .when(claim('ls_2', 1), at(2))
      .thenThrows('invalid_state');
  });

  it('a retryable failure returns to pending counting attempts, until the maximum makes it final', () => {
    const fail = (leaseId: string, retryable: boolean, reason: string): TodoCommand => ({
      type: 'Fail',
      caller,
      leaseId,
      reason,
      retryable,
      maxAttempts: 3,
    });
    let history: TodoEvent[] = [created];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const lease = `ls_${attempt}`;
      history.push(
        ...spec
          .given(...history)
          .when(claim(lease, 1000), at(attempt))
          .events(),
      );
      const failed = spec
        .given(...history)
        .when(fail(lease, true, 'flaky'), at(attempt))
        .events();
      expect(failed[0]).toMatchObject({ type: 'TodoFailed', data: { attempt, final: attempt === 3 } });
      history = [...history, ...failed];
      expect(spec.given(...history).state().status).toBe(attempt === 3 ? 'failed' : 'pending');
    }
    expect(
      spec
        .given(created, claimed())
        .when(fail('ls_1', false, 'bad input'), at(1))
        .stateAfter(),
    ).toMatchObject({ status: 'failed', attempts: 1, lastFailure: 'bad input' });
  });
});

describe('todo: moved to another queue by its owner', () => {
  const move = { type: 'MoveTodo', operator: 'alice', human: 'alice', toQueue: 'deploys' } as const;

  it('given a pending todo, when moved, then TodoMoved and the todo is on the new queue', () => {
    const when = spec.given(created).when(move);
    when.thenEvents([
      {
        type: 'TodoMoved',
        data: {
          todo_id: 'td_1',
          from_queue: 'inbox',
          to_queue: 'deploys',
          moved_by: 'alice',
          moved_at: T0.toISOString(),
        },
      },
    ]);
    const after = when.stateAfter();
    expect(after.status === 'pending' && after.queue).toBe('deploys');
  });

  it('given a claimed todo, when moved, then its lease stays with the holder', () => {
    const after = spec.given(created, claimed()).when(move).stateAfter();
    expect(after).toMatchObject({ status: 'claimed', queue: 'deploys', lease: { id: 'ls_1' } });
  });

  it('given an ended todo, or one already there, nothing moves; a foreign operator hears not found', () => {
    const completed = spec
      .given(created, claimed())
      .when({ type: 'Complete', caller, leaseId: 'ls_1', result: null })
      .events();
    spec
      .given(created, claimed(), ...completed)
      .when(move)
      .thenNothing();
    spec
      .given(created)
      .when({ ...move, toQueue: 'inbox' })
      .thenNothing();
    spec
      .given(created)
      .when({ ...move, operator: 'mallory' })
      .thenThrows('not_found');
    spec
      .given(created)
      .when({ ...move, toQueue: 'quarantine' })
      .thenThrows('bad_request');
  });
});
