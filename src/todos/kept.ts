import type { Aggregate } from '../commands/handle-command.ts';
import { isLive, type TodoState } from '../domain/todo/state.ts';

/**
 * Todos as this process last wrote them: one it handed off with its delivery (until it is
 * claimed), one it claimed (until it ends). The next move on a kept todo decides on the kept
 * state without reading the stream, and the append's expected revision proves it current; a move
 * made elsewhere meanwhile (another process's claim or release, the expiry job) fails that append
 * and the decision is made again on the stream as read (src/commands/handle-command.ts, `known`).
 * So a kept state saves a read when it is current and costs nothing when it is not.
 *
 * Bounded by count and by the bytes of the payloads kept: the oldest go first, and a todo whose
 * payload is larger than a tenth of the bound is not kept at all.
 */
export interface KeptTodos {
  get(todoId: string): Aggregate<TodoState> | undefined;
  /** Keeps the todo's state after a write of this process; an ended todo (or none) is forgotten. */
  keep(todoId: string, aggregate: Aggregate<TodoState> | undefined, payloadBytes?: number): void;
  forget(todoId: string): void;
  readonly size: number;
}

export function createKeptTodos(
  options: { readonly max?: number; readonly maxBytes?: number } = {},
): KeptTodos {
  const max = options.max ?? 4_096;
  const maxBytes = options.maxBytes ?? 8 * 1024 * 1024;
  const kept = new Map<string, { readonly aggregate: Aggregate<TodoState>; readonly bytes: number }>();
  let bytes = 0;

  const forget = (todoId: string) => {
    const held = kept.get(todoId);
    if (!held) return;
    kept.delete(todoId);
    bytes -= held.bytes;
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
    },
    forget,
    get size() {
      return kept.size;
    },
  };
}
