import type { TodoEvent, TodoKeyEvent } from './events.ts';

export type TodoStatus = 'pending' | 'claimed' | 'completed' | 'failed';

/** A key is taken only while its todo is live (design.md). */
export const isLive = (status: TodoStatus): boolean => status === 'pending' || status === 'claimed';

/** The claim a todo is under: who holds it (by lease id) and until when. */
export interface Lease {
  readonly id: string;
  readonly endpointId: string;
  readonly sessionId: string | null;
  readonly claimedAt: Date;
  readonly expiresAt: Date;
}

export interface TodoFacts {
  readonly status: TodoStatus;
  readonly id: string;
  readonly endpointId: string;
  readonly slug: string;
  readonly operator: string;
  readonly queue: string;
  readonly kind: string;
  readonly title: string;
  readonly payload: unknown;
  readonly key: string | null;
  readonly eventId: number;
  readonly createdAt: Date;
  /** The current claim; null unless claimed. */
  readonly lease: Lease | null;
  readonly attempts: number;
  readonly lastFailure: string | null;
  readonly endedAt: Date | null;
}

export type TodoState = { readonly status: 'none' } | TodoFacts;

/** A todo that exists. */
export type LiveTodo = TodoFacts;

export const initialTodoState = (): TodoState => ({ status: 'none' });

export function evolveTodo(state: TodoState, event: TodoEvent): TodoState {
  if (event.type === 'TodoCreated') {
    const d = event.data;
    return {
      status: 'pending',
      id: d.todo_id,
      endpointId: d.endpoint_id,
      slug: d.slug,
      operator: d.operator,
      queue: d.queue,
      kind: d.kind,
      title: d.title,
      payload: d.payload,
      key: d.key,
      eventId: d.event_id,
      createdAt: new Date(d.created_at),
      lease: null,
      attempts: 0,
      lastFailure: null,
      endedAt: null,
    };
  }
  if (state.status === 'none') return state;
  switch (event.type) {
    case 'TodoMoved':
      return { ...state, queue: event.data.to_queue };
    case 'TodoClaimed': {
      const d = event.data;
      return {
        ...state,
        status: 'claimed',
        lease: {
          id: d.lease_id,
          endpointId: d.endpoint_id,
          sessionId: d.session_id,
          claimedAt: new Date(d.claimed_at),
          expiresAt: new Date(d.lease_expires_at),
        },
      };
    }
    case 'TodoLeaseExtended':
      if (!state.lease) return state;
      return { ...state, lease: { ...state.lease, expiresAt: new Date(event.data.lease_expires_at) } };
    case 'TodoReleased':
    case 'TodoLeaseExpired':
      return { ...state, status: 'pending', lease: null };
    case 'TodoCompleted':
      return { ...state, status: 'completed', lease: null, endedAt: new Date(event.data.completed_at) };
    case 'TodoFailed': {
      const d = event.data;
      return {
        ...state,
        status: d.final ? 'failed' : 'pending',
        lease: null,
        attempts: d.attempt,
        lastFailure: d.reason,
        endedAt: d.final ? new Date(d.failed_at) : null,
      };
    }
    default: {
      const never: never = event;
      return never;
    }
  }
}

export type TodoKeyState =
  | { readonly status: 'free' }
  | { readonly status: 'reserved'; readonly todoId: string; readonly since: Date };

export const initialTodoKeyState = (): TodoKeyState => ({ status: 'free' });

export function evolveTodoKey(_state: TodoKeyState, event: TodoKeyEvent): TodoKeyState {
  switch (event.type) {
    case 'TodoKeyReserved':
      return { status: 'reserved', todoId: event.data.todo_id, since: new Date(event.data.reserved_at) };
    case 'TodoKeyReleased':
      return { status: 'free' };
    default: {
      const never: never = event;
      return never;
    }
  }
}
