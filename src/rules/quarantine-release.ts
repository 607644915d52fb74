import { type CommandDeps, handleCommand, readAggregate } from '../commands/handle-command.ts';
import { factsOf } from '../domain/endpoint/state.ts';
import { releaseDecider } from '../domain/quarantine/decide.ts';
import { type QuarantineReleasedData, releaseStream } from '../domain/quarantine/events.ts';
import { todoDecider } from '../domain/todo/decide.ts';
import { todoStream } from '../domain/todo/events.ts';
import { loadEndpoint } from '../endpoints/resolve.ts';
import { isWrongExpectedVersion } from '../eventstore/port.ts';
import { newId } from '../ids.ts';
import { ringDoorbell } from '../todos/doorbell.ts';

/**
 * Releasing a held delivery (docs/guides/writing-rules.md, "Quarantine"): the release is decided on its own reservation
 * stream (released at most once, naming the todo it becomes); that todo (same title, payload and
 * delivery) is then created on the chosen queue and the doorbell rung. A release cut short after
 * its reservation is completed by calling it again with the same queue.
 */
export async function releaseHeld(
  deps: CommandDeps,
  command: {
    readonly heldTodoId: string;
    readonly queue: string;
    readonly operator: string;
    readonly human: string;
  },
): Promise<{ readonly release: QuarantineReleasedData; readonly position: string | undefined }> {
  const { store } = deps;
  const { state: held } = await readAggregate(store, todoStream(command.heldTodoId), todoDecider);
  const endpoint =
    held.status === 'none' ? { status: 'none' as const } : (await loadEndpoint(store, held.endpointId)).state;
  const decided = await handleCommand(deps, releaseStream(command.heldTodoId), releaseDecider, {
    type: 'ReleaseHeld',
    heldTodoId: command.heldTodoId,
    todoId: newId('td'),
    queue: command.queue,
    operator: command.operator,
    human: command.human,
    held,
    endpoint,
  });
  const release = decided.state.release;
  if (!release || held.status === 'none' || endpoint.status === 'none') {
    throw new Error('unreachable: a release decided without its held todo');
  }

  let position: string | undefined;
  try {
    await handleCommand(
      deps,
      todoStream(release.todo_id),
      todoDecider,
      {
        type: 'CreateTodo',
        todoId: release.todo_id,
        endpoint: factsOf(endpoint),
        queue: release.queue,
        kind: held.kind,
        title: held.title,
        payload: held.payload,
        key: null,
        source: `quarantine:${command.heldTodoId}`,
        eventId: held.eventId,
        human: command.human,
      },
      { newStream: true, retries: 0 },
    );
    const rung = await ringDoorbell(deps, {
      endpointId: endpoint.id,
      queue: release.queue,
      todoId: release.todo_id,
      eventId: held.eventId,
    });
    position = rung.position; // appended after the todo, so past it in $all
  } catch (err) {
    // Created by an earlier call that was cut short after this point: the release is complete.
    if (!isWrongExpectedVersion(err)) throw err;
  }
  return { release, position };
}
