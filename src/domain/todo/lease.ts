import { HooklineError } from '../../errors.ts';
import { QUARANTINE } from '../endpoint/queue.ts';
import type { DrainEvent } from './lease-events.ts';
import type { TodoState } from './state.ts';

/**
 * The drain decisions (README "Todo lifecycle"): pure, the clock passed in. Expected refusals
 * throw a HooklineError whose code the MCP tools hand to the agent unchanged:
 *
 * - `not_found`: no such todo on this endpoint's queues (another endpoint's todo, or one held
 *   in `quarantine`, reads the same as an unknown id);
 * - `conflict`: another lease holds it;
 * - `lease_expired`: the caller's lease ran out (or was released) and the todo is no longer its;
 * - `invalid_state`: the todo has ended.
 */
export const DEFAULT_LEASE_MS = 5 * 60_000;
export const MAX_LEASE_MS = 24 * 60 * 60_000;
/** The third retryable failure is final unless the caller's scope says otherwise. */
export const DEFAULT_MAX_ATTEMPTS = 3;

type Live = Exclude<TodoState, { status: 'none' }>;

/** The caller: an endpoint (the scope it drains) and, for moves on a claim, the lease it holds. */
export interface Caller {
  readonly endpointId: string;
  readonly queues: readonly string[];
}

/** A todo is visible to the endpoint it belongs to, on one of its queues, never in quarantine. */
export function visibleTodo(state: TodoState, caller: Caller): Live {
  if (
    state.status === 'none' ||
    state.endpointId !== caller.endpointId ||
    state.queue === QUARANTINE ||
    !caller.queues.includes(state.queue)
  ) {
    throw new HooklineError('not_found', 'no todo with that id on this endpoint');
  }
  return state;
}

const expired = (lease: { readonly expiresAt: Date }, now: Date) =>
  now.getTime() >= lease.expiresAt.getTime();

export interface Claim {
  readonly todoId: string;
  readonly leaseId: string;
  readonly sessionId: string | null;
  readonly leaseMs: number;
}

/** Pending, or claimed under a lease that has run out (the expiry is recorded first). */
export function decideClaim(command: Claim, caller: Caller, state: TodoState, now: Date): DrainEvent[] {
  const todo = visibleTodo(state, caller);
  const events: DrainEvent[] = [];
  if (todo.status === 'claimed' && todo.lease) {
    if (!expired(todo.lease, now)) {
      throw new HooklineError('conflict', 'the todo is claimed by another lease');
    }
    events.push(expiry(todo.id, todo.lease, now));
  } else if (todo.status !== 'pending') {
    throw new HooklineError('invalid_state', `the todo has ended (${todo.status})`);
  }
  events.push({
    type: 'TodoClaimed',
    data: {
      todo_id: todo.id,
      endpoint_id: caller.endpointId,
      lease_id: command.leaseId,
      session_id: command.sessionId,
      claimed_at: now.toISOString(),
      lease_expires_at: new Date(now.getTime() + command.leaseMs).toISOString(),
    },
  });
  return events;
}

/** The todo as its lease holder sees it; anything else is a refusal with a stable code. */
export function requireHolder(state: TodoState, caller: Caller, leaseId: string, now: Date): Live {
  const todo = visibleTodo(state, caller);
  if (todo.status === 'completed' || todo.status === 'failed') {
    throw new HooklineError('invalid_state', `the todo has ended (${todo.status})`);
  }
  if (todo.status === 'pending' || !todo.lease) {
    throw new HooklineError(
      'lease_expired',
      'the lease is no longer held (it expired or was released); claim the todo again',
    );
  }
  if (todo.lease.id !== leaseId) {
    throw new HooklineError('conflict', 'the todo is claimed under another lease');
  }
  if (expired(todo.lease, now)) {
    throw new HooklineError('lease_expired', `the lease expired at ${todo.lease.expiresAt.toISOString()}`);
  }
  return todo;
}

export function decideHeartbeat(
  command: { readonly leaseId: string; readonly leaseMs: number },
  caller: Caller,
  state: TodoState,
  now: Date,
): DrainEvent[] {
  const todo = requireHolder(state, caller, command.leaseId, now);
  return [
    {
      type: 'TodoLeaseExtended',
      data: {
        todo_id: todo.id,
        lease_id: command.leaseId,
        extended_at: now.toISOString(),
        lease_expires_at: new Date(now.getTime() + command.leaseMs).toISOString(),
      },
    },
  ];
}

export function decideRelease(
  command: { readonly leaseId: string; readonly reason: string | null },
  caller: Caller,
  state: TodoState,
  now: Date,
): DrainEvent[] {
  const todo = requireHolder(state, caller, command.leaseId, now);
  return [
    {
      type: 'TodoReleased',
      data: {
        todo_id: todo.id,
        lease_id: command.leaseId,
        released_at: now.toISOString(),
        reason: command.reason,
      },
    },
  ];
}

export function decideComplete(
  command: { readonly leaseId: string; readonly result: unknown },
  caller: Caller,
  state: TodoState,
  now: Date,
): DrainEvent[] {
  const todo = requireHolder(state, caller, command.leaseId, now);
  return [
    {
      type: 'TodoCompleted',
      data: {
        todo_id: todo.id,
        lease_id: command.leaseId,
        completed_at: now.toISOString(),
        result: command.result ?? null,
      },
    },
  ];
}

/** A retryable failure with attempts left returns the todo to pending; otherwise it ends. */
export function decideFail(
  command: {
    readonly leaseId: string;
    readonly reason: string;
    readonly retryable: boolean;
    readonly maxAttempts: number;
  },
  caller: Caller,
  state: TodoState,
  now: Date,
): DrainEvent[] {
  const todo = requireHolder(state, caller, command.leaseId, now);
  const attempt = todo.attempts + 1;
  return [
    {
      type: 'TodoFailed',
      data: {
        todo_id: todo.id,
        lease_id: command.leaseId,
        failed_at: now.toISOString(),
        reason: command.reason,
        retryable: command.retryable,
        attempt,
        max_attempts: command.maxAttempts,
        final: !command.retryable || attempt >= command.maxAttempts,
      },
    },
  ];
}

/**
 * The expiry job's decision: only the lease it saw, only once it has run out. Anything else
 * (heartbeat extended it, the holder finished, another claim) means nothing to do.
 */
export function decideExpire(leaseId: string, state: TodoState, now: Date): DrainEvent[] {
  if (state.status !== 'claimed' || !state.lease || state.lease.id !== leaseId) return [];
  if (!expired(state.lease, now)) return [];
  return [expiry(state.id, state.lease, now)];
}

function expiry(
  todoId: string,
  lease: { readonly id: string; readonly expiresAt: Date },
  now: Date,
): DrainEvent {
  return {
    type: 'TodoLeaseExpired',
    data: {
      todo_id: todoId,
      lease_id: lease.id,
      lease_expires_at: lease.expiresAt.toISOString(),
      expired_at: now.toISOString(),
    },
  };
}

/** A todo ended by these events frees its idempotency key (design.md: keys bind live todos only). */
export const endsTodo = (events: readonly DrainEvent[]): boolean =>
  events.some((e) => e.type === 'TodoCompleted' || (e.type === 'TodoFailed' && e.data.final));

/** These moves make the todo claimable again: the queue's doorbell rings. */
export const reopensTodo = (events: readonly DrainEvent[]): boolean => {
  const last = events.at(-1);
  return (
    last !== undefined &&
    (last.type === 'TodoReleased' ||
      last.type === 'TodoLeaseExpired' ||
      (last.type === 'TodoFailed' && !last.data.final))
  );
};
