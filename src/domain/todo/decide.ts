import type { EndpointFacts, EndpointState } from '../endpoint/state.ts';
import { isExpired } from '../endpoint/state.ts';
import { DomainError } from '../errors.ts';
import { QUARANTINE } from '../queue.ts';
import type { Decider } from '../shared.ts';
import {
  type DrainEvent,
  TODO_EVENT_TYPES,
  TODO_KEY_EVENT_TYPES,
  type TodoEvent,
  type TodoKeyEvent,
} from './events.ts';
import {
  evolveTodo,
  evolveTodoKey,
  initialTodoKeyState,
  initialTodoState,
  isLive,
  type LiveTodo,
  type TodoKeyState,
  type TodoState,
} from './state.ts';

/**
 * Where a push lands (spec 4.13): only the owner may push (anyone else hears 404, as for an
 * unknown endpoint), never onto a revoked or expired endpoint (409), and only onto a vended
 * queue, which may be left out only when the endpoint drains exactly one.
 */
export function decidePushTarget(
  endpoint: EndpointState,
  operator: string,
  requestedQueue: string | undefined,
  now: Date,
): { readonly endpoint: EndpointFacts; readonly queue: string } {
  if (endpoint.status === 'none' || endpoint.operator !== operator) {
    throw new DomainError('not_found', 'no endpoint of yours has that slug or id');
  }
  if (endpoint.status === 'revoked') {
    throw new DomainError('endpoint_revoked', `endpoint ${endpoint.slug} is revoked; vend a new one`);
  }
  if (isExpired(endpoint, now)) {
    throw new DomainError(
      'endpoint_revoked',
      `endpoint ${endpoint.slug} expired at ${endpoint.expiresAt?.toISOString()}; vend a new one`,
    );
  }
  const scope = endpoint.queues.join(', ');
  if (requestedQueue === undefined) {
    const [only] = endpoint.queues;
    if (endpoint.queues.length !== 1 || only === undefined) {
      throw new DomainError(
        'bad_request',
        `queue is required: this endpoint drains several queues (${scope})`,
        {
          field: 'queue',
        },
      );
    }
    return { endpoint, queue: only };
  }
  if (!endpoint.queues.includes(requestedQueue)) {
    throw new DomainError(
      'bad_request',
      `queue ${JSON.stringify(requestedQueue)} is outside the endpoint's vended scope (${scope})`,
      { field: 'queue' },
    );
  }
  return { endpoint, queue: requestedQueue };
}

export type KeyDecision =
  | { readonly action: 'existing'; readonly todoId: string }
  | { readonly action: 'reserve'; readonly event: TodoKeyEvent }
  | { readonly action: 'wait' };

/**
 * A push with a key. The key is free, or its holder has ended: reserve it. Its holder is live:
 * answer with the holder. The holder is reserved but not yet created: another push is writing
 * it, so wait; past `staleMs` the writer is taken for dead and the key is taken over (the
 * reservation is appended at the revision read, so exactly one push takes it).
 */
export function decideKey(
  key: TodoKeyState,
  holder: TodoState | undefined,
  command: { readonly todoId: string; readonly endpointId: string },
  now: Date,
  staleMs: number,
): KeyDecision {
  const reserve: KeyDecision = {
    action: 'reserve',
    event: {
      type: 'TodoKeyReserved',
      data: { todo_id: command.todoId, endpoint_id: command.endpointId, reserved_at: now.toISOString() },
    },
  };
  if (key.status === 'free') return reserve;
  if (holder === undefined || holder.status === 'none') {
    return now.getTime() - key.since.getTime() < staleMs ? { action: 'wait' } : reserve;
  }
  return isLive(holder.status) ? { action: 'existing', todoId: key.todoId } : reserve;
}

export interface CreateTodo {
  readonly type: 'CreateTodo';
  readonly todoId: string;
  readonly endpoint: EndpointFacts;
  readonly queue: string;
  readonly kind: string;
  readonly title: string;
  readonly payload: unknown;
  readonly key: string | null;
  readonly source: string;
  readonly eventId: number;
  readonly human: string;
}

export function decideCreateTodo(command: CreateTodo, state: TodoState, now: Date): TodoEvent[] {
  if (state.status !== 'none') throw new DomainError('conflict', `todo ${command.todoId} exists`);
  return [
    {
      type: 'TodoCreated',
      data: {
        todo_id: command.todoId,
        endpoint_id: command.endpoint.id,
        slug: command.endpoint.slug,
        operator: command.endpoint.operator,
        queue: command.queue,
        kind: command.kind,
        title: command.title,
        payload: command.payload ?? null,
        key: command.key,
        source: command.source,
        event_id: command.eventId,
        created_by: command.human,
        created_at: now.toISOString(),
      },
    },
  ];
}

/**
 * The drain decisions (docs/reference/mcp-tools.md, "Todo lifecycle"): pure, the clock passed in. Expected refusals
 * throw a DomainError whose code the MCP tools hand to the agent unchanged:
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

/** The caller: an endpoint (the scope it drains) and, for moves on a claim, the lease it holds. */
export interface Caller {
  readonly endpointId: string;
  readonly queues: readonly string[];
}

/** A todo is visible to the endpoint it belongs to, on one of its queues, never in quarantine. */
export function visibleTodo(state: TodoState, caller: Caller): LiveTodo {
  if (
    state.status === 'none' ||
    state.endpointId !== caller.endpointId ||
    state.queue === QUARANTINE ||
    !caller.queues.includes(state.queue)
  ) {
    throw new DomainError('not_found', 'no todo with that id on this endpoint');
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
      throw new DomainError('conflict', 'the todo is claimed by another lease');
    }
    events.push(expiry(todo.id, todo.lease, now));
  } else if (todo.status !== 'pending') {
    throw new DomainError('invalid_state', `the todo has ended (${todo.status})`);
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
export function requireHolder(state: TodoState, caller: Caller, leaseId: string, now: Date): LiveTodo {
  const todo = visibleTodo(state, caller);
  if (todo.status === 'completed' || todo.status === 'failed') {
    throw new DomainError('invalid_state', `the todo has ended (${todo.status})`);
  }
  if (todo.status === 'pending' || !todo.lease) {
    throw new DomainError(
      'lease_expired',
      'the lease is no longer held (it expired or was released); claim the todo again',
    );
  }
  if (todo.lease.id !== leaseId) {
    throw new DomainError('conflict', 'the todo is claimed under another lease');
  }
  if (expired(todo.lease, now)) {
    throw new DomainError('lease_expired', `the lease expired at ${todo.lease.expiresAt.toISOString()}`);
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

/** The key is released once its todo has ended; releasing a key held by another todo does nothing. */
export function decideReleaseKey(key: TodoKeyState, todoId: string, now: Date): TodoKeyEvent[] {
  if (key.status !== 'reserved' || key.todoId !== todoId) return [];
  return [{ type: 'TodoKeyReleased', data: { todo_id: todoId, released_at: now.toISOString() } }];
}

export type TodoCommand =
  | CreateTodo
  | ({ readonly type: 'Claim'; readonly caller: Caller } & Claim)
  | {
      readonly type: 'Heartbeat';
      readonly caller: Caller;
      readonly leaseId: string;
      readonly leaseMs: number;
    }
  | {
      readonly type: 'Release';
      readonly caller: Caller;
      readonly leaseId: string;
      readonly reason: string | null;
    }
  | {
      readonly type: 'Complete';
      readonly caller: Caller;
      readonly leaseId: string;
      readonly result: unknown;
    }
  | {
      readonly type: 'Fail';
      readonly caller: Caller;
      readonly leaseId: string;
      readonly reason: string;
      readonly retryable: boolean;
      readonly maxAttempts: number;
    }
  | { readonly type: 'ExpireLease'; readonly leaseId: string }
  | MoveTodo;

/**
 * The endpoint's owner moves a live todo to another of the endpoint's queues (which the caller
 * checked). An ended todo, or one already there, stays where it is.
 */
export interface MoveTodo {
  readonly type: 'MoveTodo';
  readonly operator: string;
  readonly human: string;
  readonly toQueue: string;
}

export function decideMove(command: MoveTodo, state: TodoState, now: Date): TodoEvent[] {
  if (state.status === 'none' || state.operator !== command.operator) {
    throw new DomainError('not_found', 'no todo of yours has that id');
  }
  if (command.toQueue === QUARANTINE) {
    throw new DomainError('bad_request', '`quarantine` is reserved for held deliveries', {
      field: 'move_to',
    });
  }
  if (!isLive(state.status) || state.queue === command.toQueue || state.queue === QUARANTINE) return [];
  return [
    {
      type: 'TodoMoved',
      data: {
        todo_id: state.id,
        from_queue: state.queue,
        to_queue: command.toQueue,
        moved_by: command.human,
        moved_at: now.toISOString(),
      },
    },
  ];
}

export function decideTodo(command: TodoCommand, state: TodoState, now: Date): TodoEvent[] {
  switch (command.type) {
    case 'CreateTodo':
      return decideCreateTodo(command, state, now);
    case 'Claim':
      return decideClaim(command, command.caller, state, now);
    case 'Heartbeat':
      return decideHeartbeat(command, command.caller, state, now);
    case 'Release':
      return decideRelease(command, command.caller, state, now);
    case 'Complete':
      return decideComplete(command, command.caller, state, now);
    case 'Fail':
      return decideFail(command, command.caller, state, now);
    case 'ExpireLease':
      return decideExpire(command.leaseId, state, now);
    case 'MoveTodo':
      return decideMove(command, state, now);
    default: {
      const never: never = command;
      return never;
    }
  }
}

export const todoDecider: Decider<TodoCommand, TodoState, TodoEvent> = {
  initialState: initialTodoState,
  evolve: evolveTodo,
  decide: decideTodo,
  eventTypes: TODO_EVENT_TYPES,
};

export interface ReleaseKey {
  readonly type: 'ReleaseKey';
  readonly todoId: string;
}

export const todoKeyDecider: Decider<ReleaseKey, TodoKeyState, TodoKeyEvent> = {
  initialState: initialTodoKeyState,
  evolve: evolveTodoKey,
  decide: (command, state, now) => decideReleaseKey(state, command.todoId, now),
  eventTypes: TODO_KEY_EVENT_TYPES,
};
