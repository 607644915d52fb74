import { z } from 'zod';
import { defineEvent, typesOf } from '../shared.ts';

/**
 * The todo aggregate, stream `todo-<id>` (`td_…`). States: pending, claimed, completed, failed.
 * A todo is created by an operator hand-off (spec 4.13), a webhook delivery or a quarantine
 * release; the drain verbs move it (docs/reference/mcp-tools.md, "Todo lifecycle"), each move appended with the
 * revision its decision read, so of two agents racing for the same move exactly one wins. A claim
 * hands out a lease (`lease_id`, random, known only to the claimer); every later move of that
 * claim names the lease, so a stale holder cannot touch a todo that has since been claimed again.
 */
export const todoStream = (todoId: string): string => `todo-${todoId}`;

export const TodoCreated = defineEvent(
  'TodoCreated',
  z.object({
    todo_id: z.string(),
    endpoint_id: z.string(),
    slug: z.string(),
    /** The endpoint's owner: the todo is theirs. */
    operator: z.string(),
    queue: z.string(),
    kind: z.string(),
    /** Untrusted content for the agent (spec 4.13). */
    title: z.string(),
    payload: z.unknown(),
    /** The idempotency key as given, or null. */
    key: z.string().nullable(),
    /** `operator` for hand-offs; other paths (webhook routes, quarantine releases) name themselves. */
    source: z.string(),
    /** The delivery event the todo was born from. */
    event_id: z.number(),
    created_by: z.string(),
    created_at: z.string(),
  }),
);

export const TodoClaimed = defineEvent(
  'TodoClaimed',
  z.object({
    todo_id: z.string(),
    endpoint_id: z.string(),
    lease_id: z.string(),
    /** The MCP session that claimed, for the operator's eyes; the lease id is what counts. */
    session_id: z.string().nullable(),
    claimed_at: z.string(),
    lease_expires_at: z.string(),
  }),
);

/** A heartbeat: the holder is alive, the lease runs until the new expiry. */
export const TodoLeaseExtended = defineEvent(
  'TodoLeaseExtended',
  z.object({
    todo_id: z.string(),
    lease_id: z.string(),
    extended_at: z.string(),
    lease_expires_at: z.string(),
  }),
);

/** The holder gave the todo back unfinished: pending again, no attempt counted. */
export const TodoReleased = defineEvent(
  'TodoReleased',
  z.object({
    todo_id: z.string(),
    lease_id: z.string(),
    released_at: z.string(),
    reason: z.string().nullable(),
  }),
);

/** Nobody heartbeat in time (the expiry job, or a claim finding the lease run out): pending again. */
export const TodoLeaseExpired = defineEvent(
  'TodoLeaseExpired',
  z.object({
    todo_id: z.string(),
    lease_id: z.string(),
    lease_expires_at: z.string(),
    expired_at: z.string(),
  }),
);

export const TodoCompleted = defineEvent(
  'TodoCompleted',
  z.object({
    todo_id: z.string(),
    lease_id: z.string(),
    completed_at: z.string(),
    /** What the agent reported, kept as given (at most 16 KiB of JSON). */
    result: z.unknown(),
  }),
);

/**
 * A failed attempt. `final` false: retryable and attempts remain, so the todo is pending again;
 * `final` true: failed for good.
 */
export const TodoFailed = defineEvent(
  'TodoFailed',
  z.object({
    todo_id: z.string(),
    lease_id: z.string(),
    failed_at: z.string(),
    reason: z.string(),
    retryable: z.boolean(),
    /** Failed attempts so far, this one included. */
    attempt: z.number().int(),
    max_attempts: z.number().int(),
    final: z.boolean(),
  }),
);

/**
 * The owner moved a live todo to another queue of its endpoint (the endpoint stops draining its
 * queue: PATCH /api/v1/endpoints/{ref} with `move_to`). A claim, if any, stays with its holder.
 */
export const TodoMoved = defineEvent(
  'TodoMoved',
  z.object({
    todo_id: z.string(),
    from_queue: z.string(),
    to_queue: z.string(),
    moved_by: z.string(),
    moved_at: z.string(),
  }),
);

/**
 * The idempotency key reservation `todo-key-<endpoint id>-<sha256(key)>` (design.md: a key is
 * unique per endpoint among live todos). Appended with the revision read, so of two racing
 * pushes exactly one reserves; released when the todo ends, after which the key is free again.
 */
export const TodoKeyReserved = defineEvent(
  'TodoKeyReserved',
  z.object({ todo_id: z.string(), endpoint_id: z.string(), reserved_at: z.string() }),
);
export const TodoKeyReleased = defineEvent(
  'TodoKeyReleased',
  z.object({ todo_id: z.string(), released_at: z.string() }),
);

export const drainEvents = [
  TodoClaimed,
  TodoLeaseExtended,
  TodoReleased,
  TodoLeaseExpired,
  TodoCompleted,
  TodoFailed,
] as const;
export const todoEvents = [TodoCreated, ...drainEvents, TodoMoved] as const;
export const todoKeyEvents = [TodoKeyReserved, TodoKeyReleased] as const;

/** The moves of the drain verbs (claim, heartbeat, release, expiry, complete, fail). */
export type DrainEvent = z.infer<(typeof drainEvents)[number]>;
export type TodoEvent = z.infer<(typeof todoEvents)[number]>;
export type TodoMovedEvent = z.infer<typeof TodoMoved>;
export type TodoKeyEvent = z.infer<(typeof todoKeyEvents)[number]>;

export const TODO_EVENT_TYPES = typesOf(todoEvents);
export const TODO_KEY_EVENT_TYPES = typesOf(todoKeyEvents);
