import { DRAIN_EVENT_TYPES, type DrainEvent } from './lease-events.ts';

/**
 * The todo aggregate, stream `todo-<id>` (`td_…`). States: pending, claimed, completed, failed.
 * This module records creation (operator hand-offs, spec 4.13); the drain verbs add their events
 * (claimed, completed, failed, released, heartbeat) to this union and to `evolveTodo`.
 */
export type TodoEvent = TodoCreatedEvent | DrainEvent;

export type TodoCreatedEvent = {
  readonly type: 'TodoCreated';
  readonly data: {
    readonly todo_id: string;
    readonly endpoint_id: string;
    readonly slug: string;
    /** The endpoint's owner: the todo is theirs. */
    readonly operator: string;
    readonly queue: string;
    readonly kind: string;
    /** Untrusted content for the agent (spec 4.13). */
    readonly title: string;
    readonly payload: unknown;
    /** The idempotency key as given, or null. */
    readonly key: string | null;
    /** `operator` for hand-offs; other paths (webhook routes, create_for) name themselves. */
    readonly source: string;
    /** The delivery event the todo was born from. */
    readonly event_id: number;
    readonly created_by: string;
    readonly created_at: string;
  };
};

export const TODO_EVENT_TYPES: readonly TodoEvent['type'][] = ['TodoCreated', ...DRAIN_EVENT_TYPES];

export const isTodoEventType = (t: string): t is TodoEvent['type'] =>
  (TODO_EVENT_TYPES as readonly string[]).includes(t);

/**
 * The idempotency key reservation `todo-key-<endpoint id>-<sha256(key)>` (design.md: a key is
 * unique per endpoint among live todos). Appended with the revision read, so of two racing
 * pushes exactly one reserves; released when the todo ends, after which the key is free again.
 */
export type TodoKeyEvent =
  | {
      readonly type: 'TodoKeyReserved';
      readonly data: { readonly todo_id: string; readonly endpoint_id: string; readonly reserved_at: string };
    }
  | {
      readonly type: 'TodoKeyReleased';
      readonly data: { readonly todo_id: string; readonly released_at: string };
    };

export const TODO_KEY_EVENT_TYPES: readonly TodoKeyEvent['type'][] = ['TodoKeyReserved', 'TodoKeyReleased'];

export const isTodoKeyEventType = (t: string): t is TodoKeyEvent['type'] =>
  (TODO_KEY_EVENT_TYPES as readonly string[]).includes(t);
