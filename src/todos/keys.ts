import { type CommandDeps, handleCommand } from '../commands/handle-command.ts';
import { todoKeyDecider } from '../domain/todo/decide.ts';
import { isWrongExpectedVersion } from '../eventstore/port.ts';
import { sha256Hex } from '../ids.ts';

/** The key is hashed: any characters, at most 256 of them, give a short stream id. */
export const todoKeyStream = (endpointId: string, key: string): string =>
  `todo-key-${endpointId}-${sha256Hex(key)}`;

/** Frees a key held by `todoId` (a key held by another todo stays). */
export async function releaseKeyStream(deps: CommandDeps, keyStream: string, todoId: string): Promise<void> {
  try {
    await handleCommand(deps, keyStream, todoKeyDecider, { type: 'ReleaseKey', todoId });
  } catch (err) {
    // Still contended after the retries: a later push treats a key of an ended todo as free.
    if (!isWrongExpectedVersion(err)) throw err;
  }
}

/**
 * Frees a todo's key once the todo has ended (completed or failed): the drain verbs call this
 * after appending the final event. Pushes also treat a key whose todo has ended as free, so a
 * release that never happens delays nothing.
 */
export function releaseTodoKey(
  deps: CommandDeps,
  todo: { readonly id: string; readonly endpointId: string; readonly key: string | null },
): Promise<void> {
  if (todo.key === null) return Promise.resolve();
  return releaseKeyStream(deps, todoKeyStream(todo.endpointId, todo.key), todo.id);
}
