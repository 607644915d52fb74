import type { Aggregate } from '../commands/handle-command.ts';
import { isLive, type LiveTodo, type TodoState } from '../domain/todo/state.ts';

/**
 * Todos as this process last wrote them: one it handed off with its delivery (until it is
 * claimed), one it claimed (until it ends). The next move on a kept todo decides on the kept
 * state without reading the stream, and the append's expected revision proves it current; a move
 * made elsewhere meanwhile (another process's claim or release, the expiry job) fails that append
 * and the decision is made again on the stream as read (src/commands/handle-command.ts, `known`).
 * So a kept state saves a read when it is current and costs nothing when it is not.
 *
 * The pending ones are also claim_next's candidates before the read model has them
 * (src/todos/drain.ts): a todo is claimable from the moment its hand-off commits, so an agent woken
 * by the doorbell finds it even while the todos projection is still behind.
 *
 * Bounded by count and by the bytes of the payloads kept: the oldest go first, and a todo whose
 * payload is larger than a tenth of the bound is not kept at all.
 */
export interface KeptTodos {
  get(todoId: string): Aggregate<TodoState> | undefined;
  /** Keeps the todo's state after a write of this process; an ended todo (or none) is forgotten. */
  keep(todoId: string, aggregate: Aggregate<TodoState> | undefined, payloadBytes?: number): void;
  forget(todoId: string): void;
  /**
   * Up to `max` kept todos pending on the endpoint's queues, in the order they were kept (about
   * their creation order), for which `skip` is false.
   */
  pending(
    endpointId: string,
    queues: readonly string[],
    max: number,
    skip: (todoId: string) => boolean,
  ): LiveTodo[];
  readonly size: number;
}

export function createKeptTodos(
  options: { readonly max?: number; readonly maxBytes?: number } = {},
): KeptTodos {
  const max = options.max ?? 4_096;
  const maxBytes = options.maxBytes ?? 8 * 1024 * 1024;
  const kept = new Map<string, { readonly aggregate: Aggregate<TodoState>; readonly bytes: number }>();
  /** The pending ones by endpoint, in the order kept. */
  const pendingOf = new Map<string, Map<string, LiveTodo>>();
  let bytes = 0;

  const forget = (todoId: string) => {
    const held = kept.get(todoId);
    if (!held) return;
    kept.delete(todoId);
    bytes -= held.bytes;
    const { state } = held.aggregate;
    if (state.status !== 'pending') return;
    const mine = pendingOf.get(state.endpointId);
    mine?.delete(todoId);
    if (mine?.size === 0) pendingOf.delete(state.endpointId);
  };

  return {
    get: (todoId) => kept.get(todoId)?.aggregate,
    keep(todoId, aggregate, payloadBytes) {
      const size = payloadBytes ?? kept.get(todoId)?.bytes ?? 0;
      forget(todoId);
      if (!aggregate || aggregate.state.status === 'none' || !isLive(aggregate.state.status)) return;
      if (size > maxBytes / 10) return;
      while (kept.size > 0 && (kept.size >= max || bytes + size > maxBytes))
        forget(kept.keys().next().value!);
      kept.set(todoId, { aggregate, bytes: size });
      bytes += size;
      const { state } = aggregate;
      if (state.status !== 'pending') return;
      let mine = pendingOf.get(state.endpointId);
      if (!mine) {
        mine = new Map();
        pendingOf.set(state.endpointId, mine);
      }
      mine.set(todoId, state);
    },
    forget,
    pending(endpointId, queues, limit, skip) {
      const found: LiveTodo[] = [];
      const mine = pendingOf.get(endpointId);
      if (!mine) return found;
      for (const [todoId, todo] of mine) {
        if (found.length >= limit) break;
        if (queues.includes(todo.queue) && !skip(todoId)) found.push(todo);
      }
      return found;
    },
    get size() {
      return kept.size;
    },
  };
}
