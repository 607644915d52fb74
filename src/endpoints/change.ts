import type { Kysely } from 'kysely';
import { liveTodosOn } from '../../projections/todos.queries.ts';
import { type CommandDeps, handleCommand } from '../commands/handle-command.ts';
import type { Database } from '../db/database.ts';
import { type ChangeEndpointScope, endpointDecider } from '../domain/endpoint/decide.ts';
import { endpointStream } from '../domain/endpoint/events.ts';
import type { EndpointState } from '../domain/endpoint/state.ts';
import type { Verb } from '../domain/endpoint/verbs.ts';
import { todoDecider } from '../domain/todo/decide.ts';
import { todoStream } from '../domain/todo/events.ts';
import { HooklineError } from '../errors.ts';
import type { Position } from '../eventstore/port.ts';
import { loadEndpoint, resolveEndpointId } from './resolve.ts';

export interface ScopeChange {
  readonly ref: string;
  readonly operator: string;
  readonly human: string;
  readonly queues?: readonly string[] | undefined;
  readonly verbs?: readonly Verb[] | undefined;
  readonly moveTo?: string | undefined;
}

/**
 * PATCH /api/v1/endpoints/{ref}: the owner changes the queues an endpoint drains and narrows its
 * verbs, one `EndpointScopeChanged` on its stream. The live todos of a removed queue are counted
 * in the todos read model (the caller lets it catch up first); the change is judged on those
 * counts before anything is written, then, with `move_to`, each of them moves (one `TodoMoved`)
 * before the change is appended, so no todo is ever left on a queue nobody drains.
 */
export async function changeEndpointScope(
  deps: CommandDeps & { readonly db: Kysely<Database> },
  input: ScopeChange,
): Promise<{
  readonly state: Exclude<EndpointState, { status: 'none' }>;
  readonly position: Position | undefined;
  readonly moved: number;
}> {
  const { store, clock } = deps;
  const endpointId = await resolveEndpointId(store, input.ref);
  if (!endpointId) throw new HooklineError('not_found', 'no endpoint of yours has that slug or id');
  const { state } = await loadEndpoint(store, endpointId);
  const removed =
    state.status !== 'none' && input.queues ? state.queues.filter((q) => !input.queues?.includes(q)) : [];
  const live = await liveTodosOn(deps.db, endpointId, removed);
  const liveTodos: Record<string, number> = {};
  for (const todo of live) liveTodos[todo.queue] = (liveTodos[todo.queue] ?? 0) + 1;
  const command: ChangeEndpointScope = {
    type: 'ChangeEndpointScope',
    operator: input.operator,
    human: input.human,
    queues: input.queues,
    verbs: input.verbs,
    moveTo: input.moveTo ?? null,
    liveTodos,
  };
  // Judged once before any todo moves: a refused change moves nothing.
  endpointDecider.decide(command, state, clock.now());

  let moved = 0;
  if (input.moveTo !== undefined) {
    for (const todo of live) {
      const result = await handleCommand(
        deps,
        todoStream(todo.id),
        todoDecider,
        { type: 'MoveTodo', operator: input.operator, human: input.human, toQueue: input.moveTo },
        { retries: 7 },
      );
      if (result.events.length > 0) moved++;
    }
  }
  const changed = await handleCommand(deps, endpointStream(endpointId), endpointDecider, command, {
    retries: 7,
    conflictMessage: 'the endpoint changed concurrently; retry',
  });
  if (changed.state.status === 'none') throw new Error('a changed endpoint has no state');
  return { state: changed.state, position: changed.position, moved };
}
