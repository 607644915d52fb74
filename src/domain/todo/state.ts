import { sha256Hex } from '../endpoint/ids.ts';
import type { TodoEvent, TodoKeyEvent } from './events.ts';
import { evolveDrain, type Lease } from './lease-state.ts';

export const todoStream = (todoId: string): string => `todo-${todoId}`;

/** The key is hashed: any characters, at most 256 of them, give a short stream id. */
export const todoKeyStream = (endpointId: string, key: string): string =>
  `todo-key-${endpointId}-${sha256Hex(key)}`;

export type TodoStatus = 'pending' | 'claimed' | 'completed' | 'failed';

/** A key is taken only while its todo is live (design.md). */
export const isLive = (status: TodoStatus): boolean => status === 'pending' || status === 'claimed';

export type TodoState =
  | { readonly status: 'none' }
  | {
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
      /** The drain moves (lease-state.ts): the current claim, failed attempts, the end. */
      readonly lease: Lease | null;
      readonly attempts: number;
      readonly lastFailure: string | null;
      readonly endedAt: Date | null;
    };

export const initialTodoState: TodoState = { status: 'none' };

export function evolveTodo(_state: TodoState, event: TodoEvent): TodoState {
  switch (event.type) {
    case 'TodoCreated': {
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
    default:
      return evolveDrain(_state, event);
  }
}

export type TodoKeyState =
  | { readonly status: 'free' }
  | { readonly status: 'reserved'; readonly todoId: string; readonly since: Date };

export const initialTodoKeyState: TodoKeyState = { status: 'free' };

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
