import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../../clock.ts';
import type { Database } from '../../db/database.ts';
import { HooklineError } from '../../errors.ts';
import { jsonEvent } from '../../eventstore/codec.ts';
import { type EventStore, isWrongExpectedVersion, type Position } from '../../eventstore/port.ts';
import { expectedFrom, loadAggregate } from '../endpoint/aggregate.ts';
import { ringDoorbell } from '../endpoint/doorbell.ts';
import { isTodoEventType, type TodoEvent } from './events.ts';
import {
  type Caller,
  DEFAULT_MAX_ATTEMPTS,
  decideClaim,
  decideComplete,
  decideExpire,
  decideFail,
  decideHeartbeat,
  decideRelease,
  endsTodo,
  reopensTodo,
  visibleTodo,
} from './lease.ts';
import type { DrainEvent } from './lease-events.ts';
import { pendingCandidates } from './pending.ts';
import { releaseTodoKey } from './push.ts';
import { evolveTodo, initialTodoState, type TodoState, todoStream } from './state.ts';

export type LiveTodo = Exclude<TodoState, { status: 'none' }>;

export interface Moved {
  readonly todo: LiveTodo;
  /** Position of the append, for read-your-writes. */
  readonly position: Position;
}

export interface DrainDeps {
  readonly store: EventStore;
  readonly clock: Clock;
  /** The read models: claim_next picks its candidates from the todos table. */
  readonly db: Kysely<Database>;
  /** Failed attempts after which a retryable failure is final (default 3). */
  readonly maxAttempts?: number;
}

export const loadTodo = (store: EventStore, todoId: string) =>
  loadAggregate<TodoState, TodoEvent>(
    store,
    todoStream(todoId),
    initialTodoState,
    evolveTodo,
    isTodoEventType,
  );

const newLeaseId = (): string => `ls_${randomBytes(15).toString('base64url')}`;

/** How long this process remembers a todo it saw claimed, so claim_next skips it before the read model knows. */
const CLAIMED_MEMORY_MS = 30_000;

/**
 * The drain verbs over the event store: load the todo's stream, decide, append with the revision
 * read. What follows a move happens after its append: an ended todo frees its key, a todo made
 * claimable again rings its endpoint's doorbell.
 */
export function createDrain(deps: DrainDeps) {
  const { store, clock } = deps;
  const maxAttempts = deps.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const claimedHere = new Map<string, number>();
  /**
   * Candidates an agent of this process is claiming right now: the others move past them instead
   * of all racing for the same oldest todo (across processes the expected revision still decides).
   */
  const inFlight = new Set<string>();

  const remember = (todoId: string) => {
    const now = Date.now();
    if (claimedHere.size > 50_000) {
      for (const [id, until] of claimedHere) if (until < now) claimedHere.delete(id);
    }
    claimedHere.set(todoId, now + CLAIMED_MEMORY_MS);
  };
  const seenClaimed = (todoId: string) => (claimedHere.get(todoId) ?? 0) > Date.now();

  async function after(todo: LiveTodo, events: readonly DrainEvent[]): Promise<void> {
    if (endsTodo(events)) await releaseTodoKey({ store, clock }, todo);
    if (reopensTodo(events)) {
      claimedHere.delete(todo.id);
      await ringDoorbell(
        { store, clock },
        { endpointId: todo.endpointId, queue: todo.queue, todoId: todo.id, eventId: todo.eventId },
      );
    }
  }

  /** One decision appended at the revision read. A lost race is decided again on the new state. */
  async function move(
    todoId: string,
    decide: (state: TodoState, now: Date) => DrainEvent[],
    retries = 3,
  ): Promise<Moved> {
    for (let attempt = 0; ; attempt++) {
      const loaded = await loadTodo(store, todoId);
      const events = decide(loaded.state, clock.now());
      try {
        const appended = await store.append(
          todoStream(todoId),
          events.map((e) => jsonEvent(e.type, e.data)),
          { expectedRevision: expectedFrom(loaded.revision) },
        );
        const todo = events.reduce<TodoState>((s, e) => evolveTodo(s, e), loaded.state) as LiveTodo;
        await after(todo, events);
        return { todo, position: appended.position };
      } catch (err) {
        if (!isWrongExpectedVersion(err) || attempt >= retries) throw err;
      }
    }
  }

  return {
    maxAttempts,

    async get(caller: Caller, todoId: string): Promise<LiveTodo> {
      return visibleTodo((await loadTodo(store, todoId)).state, caller);
    },

    async claim(
      caller: Caller,
      command: { readonly todoId: string; readonly sessionId: string | null; readonly leaseMs: number },
    ): Promise<Moved> {
      const leaseId = newLeaseId();
      const moved = await move(command.todoId, (state, now) =>
        decideClaim({ ...command, leaseId }, caller, state, now),
      );
      remember(command.todoId);
      return moved;
    },

    /**
     * The oldest pending todo of the caller's queues, atomically: candidates in (created_at, id)
     * order from the read model, each claimed at the revision read; a candidate another agent
     * took first (or the read model still shows as pending) is skipped, never retried.
     */
    async claimNext(
      caller: Caller,
      command: {
        readonly queues: readonly string[];
        readonly sessionId: string | null;
        readonly leaseMs: number;
      },
    ): Promise<Moved | null> {
      /** One candidate at the revision read; undefined when it is not (or no longer) to be had. */
      const tryClaim = async (todoId: string): Promise<Moved | undefined> => {
        const loaded = await loadTodo(store, todoId);
        if (loaded.state.status !== 'pending') {
          if (loaded.state.status === 'claimed') remember(todoId);
          return undefined;
        }
        let events: DrainEvent[];
        try {
          events = decideClaim(
            { todoId, leaseId: newLeaseId(), sessionId: command.sessionId, leaseMs: command.leaseMs },
            caller,
            loaded.state,
            clock.now(),
          );
        } catch (err) {
          if (err instanceof HooklineError) return undefined;
          throw err;
        }
        try {
          const appended = await store.append(
            todoStream(todoId),
            events.map((e) => jsonEvent(e.type, e.data)),
            { expectedRevision: expectedFrom(loaded.revision) },
          );
          remember(todoId);
          const todo = events.reduce<TodoState>((s, e) => evolveTodo(s, e), loaded.state) as LiveTodo;
          return { todo, position: appended.position };
        } catch (err) {
          if (!isWrongExpectedVersion(err)) throw err;
          remember(todoId); // another agent won this one: on to the next
          return undefined;
        }
      };

      let cursor: { readonly createdAt: Date; readonly id: string } | undefined;
      // The first page is small (the usual case: the oldest is free); past it the read model is
      // lagging behind claims, so read further ahead per query.
      for (let limit = 32; ; limit = 256) {
        const page = await pendingCandidates(deps.db, {
          endpointId: caller.endpointId,
          queues: command.queues,
          after: cursor,
          limit,
        });
        for (const candidate of page) {
          cursor = candidate;
          if (seenClaimed(candidate.id) || inFlight.has(candidate.id)) continue;
          inFlight.add(candidate.id);
          try {
            const won = await tryClaim(candidate.id);
            if (won) return won;
          } finally {
            inFlight.delete(candidate.id);
          }
        }
        if (page.length < limit) return null;
      }
    },

    heartbeat: (
      caller: Caller,
      c: { readonly todoId: string; readonly leaseId: string; readonly leaseMs: number },
    ) => move(c.todoId, (state, now) => decideHeartbeat(c, caller, state, now)),

    release: (
      caller: Caller,
      c: { readonly todoId: string; readonly leaseId: string; readonly reason: string | null },
    ) => move(c.todoId, (state, now) => decideRelease(c, caller, state, now)),

    complete: (
      caller: Caller,
      c: { readonly todoId: string; readonly leaseId: string; readonly result: unknown },
    ) => move(c.todoId, (state, now) => decideComplete(c, caller, state, now)),

    fail: (
      caller: Caller,
      c: {
        readonly todoId: string;
        readonly leaseId: string;
        readonly reason: string;
        readonly retryable: boolean;
      },
    ) => move(c.todoId, (state, now) => decideFail({ ...c, maxAttempts }, caller, state, now)),

    /**
     * The expiry job's move: returns the todo to pending if the lease seen is still the one and
     * has run out; undefined when there was nothing to do (or another process got there first).
     */
    async expire(todoId: string, leaseId: string): Promise<Moved | undefined> {
      const loaded = await loadTodo(store, todoId);
      const events = decideExpire(leaseId, loaded.state, clock.now());
      if (events.length === 0) return undefined;
      try {
        const appended = await store.append(
          todoStream(todoId),
          events.map((e) => jsonEvent(e.type, e.data)),
          { expectedRevision: expectedFrom(loaded.revision) },
        );
        const todo = events.reduce<TodoState>((s, e) => evolveTodo(s, e), loaded.state) as LiveTodo;
        await after(todo, events);
        return { todo, position: appended.position };
      } catch (err) {
        if (isWrongExpectedVersion(err)) return undefined;
        throw err;
      }
    },
  };
}

export type Drain = ReturnType<typeof createDrain>;
