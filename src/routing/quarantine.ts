import type { Clock } from '../clock.ts';
import { loadAggregate } from '../domain/endpoint/aggregate.ts';
import { ringDoorbell } from '../domain/endpoint/doorbell.ts';
import { newId } from '../domain/endpoint/ids.ts';
import { QUARANTINE } from '../domain/endpoint/queue.ts';
import { loadEndpoint } from '../domain/endpoint/resolve.ts';
import { isExpired } from '../domain/endpoint/state.ts';
import { decideCreateTodo } from '../domain/todo/decide.ts';
import { isTodoEventType, type TodoEvent } from '../domain/todo/events.ts';
import { evolveTodo, initialTodoState, type TodoState, todoStream } from '../domain/todo/state.ts';
import { HooklineError } from '../errors.ts';
import { jsonEvent, parseData } from '../eventstore/codec.ts';
import { type EventStore, isWrongExpectedVersion, StreamNotFoundError } from '../eventstore/port.ts';

/**
 * Releasing a held delivery (README "Quarantine"). The held todo is never moved or edited: it
 * stays in `quarantine` as the record of what was held and why. A release is a reservation
 * `quarantine-release-<held todo id>` appended with `no_stream`, so a held todo is released at
 * most once, naming the todo it becomes; that todo (same title, payload and delivery) is then
 * created on the chosen queue and the doorbell rung. A release cut short after its reservation is
 * completed by calling it again with the same queue.
 */
export const QUARANTINE_RELEASED = 'QuarantineReleased';

export interface QuarantineReleasedData {
  readonly held_todo_id: string;
  readonly todo_id: string;
  readonly queue: string;
  readonly endpoint_id: string;
  readonly operator: string;
  readonly event_id: number;
  readonly released_by: string;
  readonly released_at: string;
}

export const releaseStream = (heldTodoId: string): string => `quarantine-release-${heldTodoId}`;

async function readRelease(store: EventStore, heldTodoId: string): Promise<QuarantineReleasedData | null> {
  try {
    for await (const e of store.readStream(releaseStream(heldTodoId))) {
      if (e.type === QUARANTINE_RELEASED) return parseData<QuarantineReleasedData>(e);
    }
  } catch (err) {
    if (!(err instanceof StreamNotFoundError)) throw err;
  }
  return null;
}

export async function releaseHeld(
  deps: { readonly store: EventStore; readonly clock: Clock },
  command: {
    readonly heldTodoId: string;
    readonly queue: string;
    readonly operator: string;
    readonly human: string;
  },
): Promise<{ readonly release: QuarantineReleasedData; readonly position: string | undefined }> {
  const { store, clock } = deps;
  const { state: held } = await loadAggregate<TodoState, TodoEvent>(
    store,
    todoStream(command.heldTodoId),
    initialTodoState,
    evolveTodo,
    isTodoEventType,
  );
  if (held.status === 'none' || held.operator !== command.operator || held.queue !== QUARANTINE) {
    throw new HooklineError('not_found', 'no held delivery of yours has that todo id');
  }
  const { state: endpoint } = await loadEndpoint(store, held.endpointId);
  if (endpoint.status !== 'active' || isExpired(endpoint, clock.now())) {
    throw new HooklineError('endpoint_revoked', `endpoint ${held.slug} is no longer active`);
  }
  if (command.queue === QUARANTINE || !endpoint.queues.includes(command.queue)) {
    throw new HooklineError(
      'bad_request',
      `queue ${JSON.stringify(command.queue)} is not one of the endpoint's queues (${endpoint.queues.filter((q) => q !== QUARANTINE).join(', ')})`,
      { field: 'queue' },
    );
  }

  let release = await readRelease(store, command.heldTodoId);
  if (release && release.queue !== command.queue) {
    throw new HooklineError('conflict', `already released to ${release.queue} as ${release.todo_id}`, {
      todo_id: release.todo_id,
      queue: release.queue,
    });
  }
  if (!release) {
    const fresh: QuarantineReleasedData = {
      held_todo_id: command.heldTodoId,
      todo_id: newId('td'),
      queue: command.queue,
      endpoint_id: endpoint.id,
      operator: endpoint.operator,
      event_id: held.eventId,
      released_by: command.human,
      released_at: clock.now().toISOString(),
    };
    try {
      await store.append(releaseStream(command.heldTodoId), [jsonEvent(QUARANTINE_RELEASED, fresh)], {
        expectedRevision: 'no_stream',
      });
      release = fresh;
    } catch (err) {
      if (!isWrongExpectedVersion(err)) throw err;
      release = await readRelease(store, command.heldTodoId);
      if (!release || release.queue !== command.queue) {
        throw new HooklineError('conflict', 'released meanwhile to another queue');
      }
    }
  }

  const { status: _s, ...facts } = endpoint;
  const events = decideCreateTodo(
    {
      todoId: release.todo_id,
      endpoint: facts,
      queue: release.queue,
      kind: held.kind,
      title: held.title,
      payload: held.payload,
      key: null,
      source: `quarantine:${command.heldTodoId}`,
      eventId: held.eventId,
      human: command.human,
    },
    initialTodoState,
    clock.now(),
  );
  let position: string | undefined;
  try {
    await store.append(
      todoStream(release.todo_id),
      events.map((e) => jsonEvent(e.type, e.data)),
      { expectedRevision: 'no_stream' },
    );
    const rung = await ringDoorbell(
      { store, clock },
      { endpointId: endpoint.id, queue: release.queue, todoId: release.todo_id, eventId: held.eventId },
    );
    position = rung.position; // appended after the todo, so past it in $all
  } catch (err) {
    // Created by an earlier call that was cut short after this point: the release is complete.
    if (!isWrongExpectedVersion(err)) throw err;
  }
  return { release, position };
}
