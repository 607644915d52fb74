import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { pendingCandidates, pendingCandidatesWithRevision } from '../../projections/todos.queries.ts';
import { type CommandDeps, type Decide, handleCommand, readAggregate } from '../commands/handle-command.ts';
import type { Database } from '../db/database.ts';
import { DomainError } from '../domain/errors.ts';
import {
  type Caller,
  DEFAULT_MAX_ATTEMPTS,
  decideClaim,
  endsTodo,
  reopensTodo,
  type TodoCommand,
  todoDecider,
  visibleTodo,
} from '../domain/todo/decide.ts';
import { type DrainEvent, type TodoEvent, todoStream } from '../domain/todo/events.ts';
import type { LiveTodo, TodoState } from '../domain/todo/state.ts';
import { isWrongExpectedVersion, type Position } from '../eventstore/port.ts';
import { ringDoorbell } from './doorbell.ts';
import { createKeptTodos, type KeptTodos } from './kept.ts';
import { releaseTodoKey } from './keys.ts';

export type { LiveTodo } from '../domain/todo/state.ts';

export interface Moved {
  readonly todo: LiveTodo;
  /** Position of the append, for read-your-writes. */
  readonly position: Position;
}

export interface DrainDeps extends CommandDeps {
  /** The read models: claim_next picks its candidates from the todos table. */
  readonly db: Kysely<Database>;
  /** Failed attempts after which a retryable failure is final (default 3). */
  readonly maxAttempts?: number;
  /** Todos this process wrote last, shared with the hand-off (default: the drain's own). */
  readonly kept?: KeptTodos;
}

export const loadTodo = (store: CommandDeps['store'], todoId: string) =>
  readAggregate(store, todoStream(todoId), todoDecider);

const newLeaseId = (): string => `ls_${randomBytes(15).toString('base64url')}`;

/** How long this process remembers a todo it saw claimed, so claim_next skips it before the read model knows. */
const CLAIMED_MEMORY_MS = 30_000;

/** How many of the todos kept by this process one claim_next considers besides the read model's. */
const KEPT_CANDIDATES = 64;

/**
 * claim_next's first page of candidates from the read model: twice as many as the latest claims
 * went through before they won one, within these bounds. The read model follows the claims by tens
 * of milliseconds, so its oldest "pending" todos are mostly ones just claimed, which a claim skips
 * from memory (measured under bench:agent, four agents at about 400 claims a second: 8 to 19
 * candidates gone through at the median, 40 at most). A page that all of them fill is followed by
 * pages of NEXT_PAGE.
 */
const FIRST_PAGE_MIN = 32;
const FIRST_PAGE_MAX = 128;
const NEXT_PAGE = 256;
/** How much of the longest recent walk the next claim's page still allows for, a claim later. */
const WALK_DECAY = 0.98;

interface Candidate {
  readonly createdAt: Date;
  readonly id: string;
}

/** claim_next's order: the oldest first, then by id. */
const oldestFirst = (a: Candidate, b: Candidate): number =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * claim_next's first page of candidates, read ahead with another check in the same statement
 * (firstCandidates): used by the claim_next whose endpoint and queues it was read for.
 */
export interface FirstPage {
  readonly endpointId: string;
  readonly queues: readonly string[];
  /** The page's size as asked: a full page may have more after it. */
  readonly limit: number;
  readonly candidates: readonly Candidate[];
}

const sameQueues = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((q, i) => q === b[i]);

const isDrainEvent = (e: TodoEvent): e is DrainEvent => e.type !== 'TodoCreated' && e.type !== 'TodoMoved';

/**
 * The drain verbs over the event store, each one command through the command handler. What
 * follows a move happens after its append: an ended todo frees its key, a todo made claimable
 * again rings its endpoint's doorbell.
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
  /** Todos as this process last wrote them: a move on one decides without reading it (kept.ts). */
  const kept = deps.kept ?? createKeptTodos();
  const remember = (todoId: string) => {
    const now = Date.now();
    if (claimedHere.size > 50_000) {
      for (const [id, until] of claimedHere) if (until < now) claimedHere.delete(id);
    }
    claimedHere.set(todoId, now + CLAIMED_MEMORY_MS);
  };
  const seenClaimed = (todoId: string) => (claimedHere.get(todoId) ?? 0) > Date.now();
  /** Candidates the latest claims went through, the won one included (the longest, decaying). */
  let walk = 0;
  const firstPageSize = () => Math.min(FIRST_PAGE_MAX, Math.max(FIRST_PAGE_MIN, Math.ceil(walk * 2)));

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

  /** One drain move through the handler; a lost race is decided again on the new state. */
  async function move(
    todoId: string,
    command: TodoCommand | Decide<TodoState, TodoEvent>,
    retries = 3,
  ): Promise<Moved | undefined> {
    const known = kept.get(todoId);
    let result: Awaited<ReturnType<typeof handleCommand<TodoCommand, TodoState, TodoEvent>>>;
    try {
      result = await handleCommand({ store, clock }, todoStream(todoId), todoDecider, command, {
        retries,
        ...(known ? { known } : {}),
      });
    } catch (err) {
      kept.forget(todoId);
      throw err;
    }
    kept.keep(todoId, result.position === undefined ? undefined : result);
    if (result.position === undefined || result.state.status === 'none') return undefined;
    await after(result.state, result.events.filter(isDrainEvent));
    return { todo: result.state, position: result.position };
  }

  const moved = async (todoId: string, command: TodoCommand): Promise<Moved> => {
    const m = await move(todoId, command);
    if (!m) throw new Error(`the drain move ${command.type} recorded nothing`);
    return m;
  };

  return {
    maxAttempts,

    /**
     * The first page claim_next reads for these queues, and the current revision of `streamId`
     * read in the same statement (the MCP bearer check of the calling endpoint, src/mcp/auth.ts).
     */
    async firstCandidates(
      endpointId: string,
      queues: readonly string[],
      streamId: string,
    ): Promise<{ readonly revision: bigint; readonly page: FirstPage }> {
      const limit = firstPageSize();
      const { revision, candidates } = await pendingCandidatesWithRevision(
        deps.db,
        { endpointId, queues, limit },
        streamId,
      );
      return { revision, page: { endpointId, queues: [...queues], limit, candidates } };
    },

    async get(caller: Caller, todoId: string): Promise<LiveTodo> {
      return visibleTodo((await loadTodo(store, todoId)).state, caller);
    },

    async claim(
      caller: Caller,
      command: { readonly todoId: string; readonly sessionId: string | null; readonly leaseMs: number },
    ): Promise<Moved> {
      const result = await moved(command.todoId, {
        type: 'Claim',
        caller,
        leaseId: newLeaseId(),
        ...command,
      });
      remember(command.todoId);
      return result;
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
        /** The first page as read ahead for this call (firstCandidates), instead of reading it here. */
        readonly firstPage?: FirstPage;
      },
    ): Promise<Moved | null> {
      /** One candidate at the revision read; undefined when it is not (or no longer) to be had. */
      const tryClaim = async (todoId: string): Promise<Moved | undefined> => {
        const claim: Decide<TodoState, TodoEvent> = (state, now) => {
          if (state.status !== 'pending') {
            // Claimed, or ended (never pending again): skipped until the read model says so.
            if (state.status !== 'none') remember(todoId);
            return [];
          }
          const leaseId = newLeaseId();
          return decideClaim(
            { todoId, leaseId, sessionId: command.sessionId, leaseMs: command.leaseMs },
            caller,
            state,
            now,
          );
        };
        try {
          const won = await move(todoId, claim, 0);
          if (won) remember(todoId);
          return won;
        } catch (err) {
          if (isWrongExpectedVersion(err)) {
            remember(todoId); // another agent won this one: on to the next
            return undefined;
          }
          if (err instanceof DomainError) return undefined;
          throw err;
        }
      };

      const skip = (todoId: string) => seenClaimed(todoId) || inFlight.has(todoId);
      // The todos this process handed off (or made pending again) are candidates before the read
      // model has them: the doorbell rings when the hand-off commits, and the agent it wakes must
      // find the todo then, not once the todos projection has caught up.
      const kept_ = kept
        .pending(caller.endpointId, command.queues, KEPT_CANDIDATES, skip)
        .map((t) => ({ id: t.id, createdAt: t.createdAt }))
        .sort(oldestFirst);
      let k = 0;
      const tried = new Set<string>();
      let cursor: Candidate | undefined;
      // The first page holds the todos claimed lately that the read model still shows as pending
      // (it follows the claims by tens of milliseconds): past it, read further ahead per query.
      const ahead = command.firstPage;
      const usable =
        ahead && ahead.endpointId === caller.endpointId && sameQueues(ahead.queues, command.queues)
          ? ahead
          : undefined;
      let readAhead = usable?.candidates;
      for (let limit = usable?.limit ?? firstPageSize(); ; limit = NEXT_PAGE) {
        const page =
          readAhead ??
          (await pendingCandidates(deps.db, {
            endpointId: caller.endpointId,
            queues: command.queues,
            after: cursor,
            limit,
          }));
        readAhead = undefined;
        cursor = page.length === limit ? page[page.length - 1] : undefined;
        // The kept ones up to the end of this page (all that are left after the last page), in order.
        const merged = [...page];
        while (k < kept_.length && (!cursor || oldestFirst(kept_[k]!, cursor) <= 0)) merged.push(kept_[k++]!);
        if (merged.length > page.length) merged.sort(oldestFirst);
        for (const candidate of merged) {
          if (tried.has(candidate.id)) continue;
          tried.add(candidate.id);
          if (skip(candidate.id)) continue;
          inFlight.add(candidate.id);
          try {
            const won = await tryClaim(candidate.id);
            if (won) {
              walk = Math.max(tried.size, walk * WALK_DECAY);
              return won;
            }
          } finally {
            inFlight.delete(candidate.id);
          }
        }
        if (!cursor) return null;
      }
    },

    heartbeat: (
      caller: Caller,
      c: { readonly todoId: string; readonly leaseId: string; readonly leaseMs: number },
    ) => moved(c.todoId, { type: 'Heartbeat', caller, leaseId: c.leaseId, leaseMs: c.leaseMs }),

    release: (
      caller: Caller,
      c: { readonly todoId: string; readonly leaseId: string; readonly reason: string | null },
    ) => moved(c.todoId, { type: 'Release', caller, leaseId: c.leaseId, reason: c.reason }),

    complete: (
      caller: Caller,
      c: { readonly todoId: string; readonly leaseId: string; readonly result: unknown },
    ) => moved(c.todoId, { type: 'Complete', caller, leaseId: c.leaseId, result: c.result }),

    fail: (
      caller: Caller,
      c: {
        readonly todoId: string;
        readonly leaseId: string;
        readonly reason: string;
        readonly retryable: boolean;
      },
    ) =>
      moved(c.todoId, {
        type: 'Fail',
        caller,
        leaseId: c.leaseId,
        reason: c.reason,
        retryable: c.retryable,
        maxAttempts,
      }),

    /**
     * The expiry job's move: returns the todo to pending if the lease seen is still the one and
     * has run out; undefined when there was nothing to do (or another process got there first).
     */
    async expire(todoId: string, leaseId: string): Promise<Moved | undefined> {
      try {
        return await move(todoId, { type: 'ExpireLease', leaseId }, 0);
      } catch (err) {
        if (isWrongExpectedVersion(err)) return undefined;
        throw err;
      }
    },
  };
}

export type Drain = ReturnType<typeof createDrain>;
