import { HooklineError } from '../../errors.ts';
import { type EndpointFacts, type EndpointState, isExpired } from '../endpoint/state.ts';
import type { TodoEvent, TodoKeyEvent } from './events.ts';
import { isLive, type TodoKeyState, type TodoState } from './state.ts';

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
    throw new HooklineError('not_found', 'no endpoint of yours has that slug or id');
  }
  if (endpoint.status === 'revoked') {
    throw new HooklineError('endpoint_revoked', `endpoint ${endpoint.slug} is revoked; vend a new one`);
  }
  if (isExpired(endpoint, now)) {
    throw new HooklineError(
      'endpoint_revoked',
      `endpoint ${endpoint.slug} expired at ${endpoint.expiresAt?.toISOString()}; vend a new one`,
    );
  }
  const scope = endpoint.queues.join(', ');
  if (requestedQueue === undefined) {
    const [only] = endpoint.queues;
    if (endpoint.queues.length !== 1 || only === undefined) {
      throw new HooklineError(
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
    throw new HooklineError(
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
  if (state.status !== 'none') throw new HooklineError('conflict', `todo ${command.todoId} exists`);
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

/** The key is released once its todo has ended; releasing a key held by another todo does nothing. */
export function decideReleaseKey(key: TodoKeyState, todoId: string, now: Date): TodoKeyEvent[] {
  if (key.status !== 'reserved' || key.todoId !== todoId) return [];
  return [{ type: 'TodoKeyReleased', data: { todo_id: todoId, released_at: now.toISOString() } }];
}
