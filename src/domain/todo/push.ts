import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../../clock.ts';
import { HooklineError } from '../../errors.ts';
import { jsonEvent } from '../../eventstore/codec.ts';
import {
  type AppendResult,
  type EventStore,
  isWrongExpectedVersion,
  type Position,
} from '../../eventstore/port.ts';
import type { FollowUps } from '../../follow-up.ts';
import type { DeliveryRecorder } from '../../ingest/recorder.ts';
import { expectedFrom, loadAggregate } from '../endpoint/aggregate.ts';
import { ringDoorbell } from '../endpoint/doorbell.ts';
import { newId } from '../endpoint/ids.ts';
import { loadEndpoint, resolveEndpointId } from '../endpoint/resolve.ts';
import { decideCreateTodo, decideKey, decidePushTarget, decideReleaseKey } from './decide.ts';
import { isTodoEventType, isTodoKeyEventType, type TodoEvent, type TodoKeyEvent } from './events.ts';
import {
  evolveTodo,
  evolveTodoKey,
  initialTodoKeyState,
  initialTodoState,
  type TodoState,
  todoKeyStream,
  todoStream,
} from './state.ts';

export interface PushDeps {
  readonly store: EventStore;
  readonly clock: Clock;
  /** The ingestion module's recorder: every path appends its `DeliveryReceived` through it. */
  readonly recorder: Pick<DeliveryRecorder, 'record'>;
  /** The todo and the doorbell follow the durable hand-off delivery, awaited up to a bound. */
  readonly followUps: FollowUps;
  /** A key reserved this long without its todo is taken for a dead writer's (default 30 s). */
  readonly keyStaleMs?: number;
  /** How long a push waits for a racing push with the same key to finish writing (default 10 s). */
  readonly keyWaitMs?: number;
}

export interface PushInput {
  readonly ref: string;
  readonly operator: string;
  readonly human: string;
  readonly title: string;
  readonly queue: string | undefined;
  readonly kind: string;
  readonly payload: unknown;
  readonly key: string | null;
  readonly sourceIp: string | null;
  /** Sanitized request headers for the delivery record. */
  readonly headers: Readonly<Record<string, string>>;
}

export interface Pushed {
  readonly id: string;
  readonly endpointId: string;
  readonly slug: string;
  readonly queue: string;
  readonly state: string;
  readonly created: boolean;
  readonly eventId: number;
  /**
   * Position of the todo's creation: undefined when an existing todo is returned, or when its
   * creation outlasted the follow-up bound (it is then still being written).
   */
  readonly position: Position | undefined;
}

const loadTodo = (store: EventStore, todoId: string) =>
  loadAggregate<TodoState, TodoEvent>(
    store,
    todoStream(todoId),
    initialTodoState,
    evolveTodo,
    isTodoEventType,
  );

const loadKey = (store: EventStore, stream: string) =>
  loadAggregate(store, stream, initialTodoKeyState, evolveTodoKey, isTodoKeyEventType);

/**
 * POST /api/v1/endpoints/{ref}/todos (spec 4.13, 3). A push with a key first reserves the key
 * (appended at the revision read, so of racing pushes exactly one wins), then records the
 * hand-off delivery, creates the todo and rings the doorbell. A push that loses the race waits
 * for the winner's todo and answers it with created=false: nothing minted, nothing rung. Once the
 * delivery is durable, the todo and the doorbell are awaited only up to the follow-ups' bound.
 */
export async function pushTodo(deps: PushDeps, input: PushInput): Promise<Pushed> {
  const { store, clock } = deps;
  const endpointId = await resolveEndpointId(store, input.ref);
  if (!endpointId) throw new HooklineError('not_found', 'no endpoint of yours has that slug or id');
  const loaded = await loadEndpoint(store, endpointId);
  const { endpoint, queue } = decidePushTarget(loaded.state, input.operator, input.queue, clock.now());

  const todoId = newId('td');
  const keyStream = input.key === null ? undefined : todoKeyStream(endpoint.id, input.key);
  if (keyStream) {
    const existing = await reserveKey(deps, keyStream, { todoId, endpointId: endpoint.id });
    if (existing) {
      return {
        id: existing.id,
        endpointId: existing.endpointId,
        slug: existing.slug,
        queue: existing.queue,
        state: existing.status,
        created: false,
        eventId: existing.eventId,
        position: undefined,
      };
    }
  }

  // Frees the key for the next push rather than leave it to the stale takeover.
  const releaseKey = () =>
    keyStream ? releaseKeyStream(deps, keyStream, todoId).catch(() => {}) : Promise.resolve();
  let eventId: number;
  try {
    const body = new TextEncoder().encode(
      JSON.stringify({ title: input.title, queue, kind: input.kind, payload: input.payload, key: input.key }),
    );
    const recorded = await deps.recorder.record({
      payload: body,
      provider: 'operator',
      family: 'operator',
      trust_mode: 'operator',
      verified: true,
      verify_detail: `pushed by ${input.human}`,
      event_type: 'todo.push',
      external_id: null,
      content_type: 'application/json',
      source_ip: input.sourceIp,
      headers: input.headers,
      received_at: clock.now(),
      route: { endpoint_id: endpoint.id, slug: endpoint.slug, queue, todo_id: todoId, kind: input.kind },
    });
    eventId = recorded.ack.id;
  } catch (err) {
    await releaseKey();
    throw err;
  }
  const fields = { endpoint: endpoint.id, event_id: eventId, todo: todoId };
  const followed = await deps.followUps.run(fields, async (step) => {
    const events = decideCreateTodo(
      {
        todoId,
        endpoint,
        queue,
        kind: input.kind,
        title: input.title,
        payload: input.payload,
        key: input.key,
        source: 'operator',
        eventId,
        human: input.human,
      },
      initialTodoState,
      clock.now(),
    );
    step(`the todo ${todoId} of event ${eventId}`);
    let created: AppendResult;
    try {
      created = await store.append(
        todoStream(todoId),
        events.map((e) => jsonEvent(e.type, e.data)),
        { expectedRevision: 'no_stream' },
      );
    } catch (err) {
      await releaseKey();
      throw err;
    }
    // The todo exists from here on: its key stays held, whatever becomes of the doorbell.
    step(`the doorbell of endpoint ${endpoint.id} (queue ${queue}, todo ${todoId})`);
    await ringDoorbell(deps, { endpointId: endpoint.id, queue, todoId, eventId });
    return created.position;
  });
  return {
    id: todoId,
    endpointId: endpoint.id,
    slug: endpoint.slug,
    queue,
    state: 'pending',
    created: true,
    eventId,
    position: followed.done ? followed.value : undefined,
  };
}

/** Reserves the key for `todoId`, or answers the live todo that holds it. */
async function reserveKey(
  deps: PushDeps,
  keyStream: string,
  command: { readonly todoId: string; readonly endpointId: string },
): Promise<Exclude<TodoState, { status: 'none' }> | undefined> {
  const started = performance.now();
  const waitMs = deps.keyWaitMs ?? 10_000;
  for (let round = 0; ; round++) {
    const key = await loadKey(deps.store, keyStream);
    const holder =
      key.state.status === 'reserved' ? (await loadTodo(deps.store, key.state.todoId)).state : undefined;
    const decision = decideKey(key.state, holder, command, deps.clock.now(), deps.keyStaleMs ?? 30_000);
    switch (decision.action) {
      case 'existing':
        if (holder === undefined || holder.status === 'none') throw new Error('unreachable: live holder');
        return holder;
      case 'reserve':
        try {
          await deps.store.append(keyStream, [jsonEvent(decision.event.type, decision.event.data)], {
            expectedRevision: expectedFrom(key.revision),
          });
          return undefined;
        } catch (err) {
          if (!isWrongExpectedVersion(err)) throw err;
        }
        break;
      case 'wait':
        if (performance.now() - started > waitMs) {
          throw new HooklineError(
            'unavailable',
            'another push with this key is still being recorded; retry in a moment',
          );
        }
        await sleep(Math.min(10 * 2 ** Math.min(round, 4), 160));
        break;
      default: {
        const never: never = decision;
        throw new Error(`unhandled key decision ${JSON.stringify(never)}`);
      }
    }
  }
}

async function releaseKeyStream(
  deps: { readonly store: EventStore; readonly clock: Clock },
  keyStream: string,
  todoId: string,
): Promise<void> {
  for (let attempt = 0; attempt < 4; attempt++) {
    const key = await loadKey(deps.store, keyStream);
    const events: TodoKeyEvent[] = decideReleaseKey(key.state, todoId, deps.clock.now());
    if (events.length === 0) return;
    try {
      await deps.store.append(
        keyStream,
        events.map((e) => jsonEvent(e.type, e.data)),
        { expectedRevision: expectedFrom(key.revision) },
      );
      return;
    } catch (err) {
      if (!isWrongExpectedVersion(err)) throw err;
    }
  }
}

/**
 * Frees a todo's key once the todo has ended (completed or failed): the drain verbs call this
 * after appending the final event. Pushes also treat a key whose todo has ended as free, so a
 * release that never happens delays nothing.
 */
export function releaseTodoKey(
  deps: { readonly store: EventStore; readonly clock: Clock },
  todo: { readonly id: string; readonly endpointId: string; readonly key: string | null },
): Promise<void> {
  if (todo.key === null) return Promise.resolve();
  return releaseKeyStream(deps, todoKeyStream(todo.endpointId, todo.key), todo.id);
}
