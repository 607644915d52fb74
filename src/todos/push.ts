import { setTimeout as sleep } from 'node:timers/promises';
import { type CommandDeps, handleCommand, readAggregate } from '../commands/handle-command.ts';
import type { ProviderFamily, TrustMode } from '../domain/delivery/events.ts';
import type { EndpointFacts } from '../domain/endpoint/state.ts';
import {
  decideKey,
  decidePushTarget,
  type KeyDecision,
  todoDecider,
  todoKeyDecider,
} from '../domain/todo/decide.ts';
import { todoStream } from '../domain/todo/events.ts';
import type { LiveTodo } from '../domain/todo/state.ts';
import { loadEndpoint, resolveEndpointId } from '../endpoints/resolve.ts';
import { HooklineError } from '../errors.ts';
import type { Position } from '../eventstore/port.ts';
import type { FollowUps } from '../follow-up.ts';
import { newId } from '../ids.ts';
import type { DeliveryRecorder } from '../ingest/recorder.ts';
import { ringDoorbell } from './doorbell.ts';
import { type HandOff, handOffAppends, handsOffAtomically } from './hand-off.ts';
import { releaseKeyStream, todoKeyStream } from './keys.ts';

export interface PushDeps extends CommandDeps {
  /** The ingestion module's recorder: every path appends its `DeliveryReceived` through it. */
  readonly recorder: Pick<DeliveryRecorder, 'record'>;
  /** Where they are not appended with it, the todo and the doorbell follow the durable delivery, awaited up to a bound. */
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

/**
 * POST /api/v1/endpoints/{ref}/todos (spec 4.13, 3). A push with a key first reserves the key
 * (appended at the revision read, so of racing pushes exactly one wins), then records the
 * hand-off delivery, creates the todo and rings the doorbell. A push that loses the race waits
 * for the winner's todo and answers it with created=false: nothing minted, nothing rung. The
 * delivery, its todo and the ring are one atomic append (hand-off.ts); on a store without one
 * they follow the durable delivery and are awaited only up to the follow-ups' bound.
 */
export async function pushTodo(deps: PushDeps, input: PushInput): Promise<Pushed> {
  const { store, clock } = deps;
  const endpointId = await resolveEndpointId(store, input.ref);
  if (!endpointId) throw new HooklineError('not_found', 'no endpoint of yours has that slug or id');
  const loaded = await loadEndpoint(store, endpointId);
  const target = decidePushTarget(loaded.state, input.operator, input.queue, clock.now());
  return handOffTodo(deps, target, {
    ...input,
    via: {
      provider: 'operator',
      family: 'operator',
      trustMode: 'operator',
      verifyDetail: `pushed by ${input.human}`,
      todoSource: 'operator',
    },
  });
}

/** Where a hand-off comes from: the operator (spec 4.13) or an agent across a friend edge (create_for). */
export interface HandOffVia {
  readonly provider: string;
  readonly family: ProviderFamily;
  readonly trustMode: TrustMode;
  readonly verifyDetail: string;
  /** The todo's `source`. */
  readonly todoSource: string;
}

export type HandOffInput = Omit<PushInput, 'ref' | 'operator' | 'queue'> & { readonly via: HandOffVia };

/**
 * Mints one todo on a target already decided (endpoint active, queue in scope): the key first,
 * then the durable hand-off delivery with the todo and the doorbell (spec 3).
 */
export async function handOffTodo(
  deps: PushDeps,
  target: { readonly endpoint: EndpointFacts; readonly queue: string },
  input: HandOffInput,
): Promise<Pushed> {
  const { store, clock } = deps;
  const { endpoint, queue } = target;

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
  const handOff: HandOff = {
    todo: {
      todoId,
      endpoint,
      queue,
      kind: input.kind,
      title: input.title,
      payload: input.payload,
      key: input.key,
      source: input.via.todoSource,
      human: input.human,
    },
    facts: [],
  };
  // The todo and its ring in the delivery's own transaction where the store has one (hand-off.ts).
  const atomic = handsOffAtomically(store);
  let eventId: number;
  let created: Position | undefined;
  try {
    const body = new TextEncoder().encode(
      JSON.stringify({ title: input.title, queue, kind: input.kind, payload: input.payload, key: input.key }),
    );
    const recorded = await deps.recorder.record(
      {
        payload: body,
        provider: input.via.provider,
        family: input.via.family,
        trust_mode: input.via.trustMode,
        verified: true,
        verify_detail: input.via.verifyDetail,
        event_type: 'todo.push',
        external_id: null,
        content_type: 'application/json',
        source_ip: input.sourceIp,
        headers: input.headers,
        received_at: clock.now(),
        route: { endpoint_id: endpoint.id, slug: endpoint.slug, queue, todo_id: todoId, kind: input.kind },
      },
      atomic ? handOffAppends(handOff, 'stamped', clock.now()) : [],
    );
    eventId = recorded.ack.id;
    // The last append of the hand-off: the projections that pass it have seen the todo.
    created = recorded.also.at(-1)?.position;
  } catch (err) {
    await releaseKey();
    throw err;
  }
  if (!atomic) {
    // A store without a multi-stream transaction (EventStoreDB): the todo and the ring follow.
    const fields = { endpoint: endpoint.id, event_id: eventId, todo: todoId };
    const followed = await deps.followUps.run(fields, async (step) => {
      step(`the todo ${todoId} of event ${eventId}`);
      try {
        const result = await handleCommand(
          deps,
          todoStream(todoId),
          todoDecider,
          { type: 'CreateTodo', ...handOff.todo!, eventId },
          { newStream: true, retries: 0 },
        );
        created = result.position;
      } catch (err) {
        await releaseKey();
        throw err;
      }
      // The todo exists from here on: its key stays held, whatever becomes of the doorbell.
      step(`the doorbell of endpoint ${endpoint.id} (queue ${queue}, todo ${todoId})`);
      await ringDoorbell(deps, { endpointId: endpoint.id, queue, todoId, eventId });
    });
    if (!followed.done) created = undefined;
  }
  return {
    id: todoId,
    endpointId: endpoint.id,
    slug: endpoint.slug,
    queue,
    state: 'pending',
    created: true,
    eventId,
    position: created,
  };
}

/** Racing pushes with one key each decide again after losing; every round lets one of them win. */
const KEY_RACE_RETRIES = 100;

/** Reserves the key for `todoId`, or answers the live todo that holds it. */
async function reserveKey(
  deps: PushDeps,
  keyStream: string,
  command: { readonly todoId: string; readonly endpointId: string },
): Promise<LiveTodo | undefined> {
  const started = performance.now();
  const waitMs = deps.keyWaitMs ?? 10_000;
  for (let round = 0; ; round++) {
    let decision: KeyDecision | undefined;
    let holder: LiveTodo | undefined;
    await handleCommand(
      deps,
      keyStream,
      todoKeyDecider,
      async (key, now) => {
        const read =
          key.status === 'reserved'
            ? (await readAggregate(deps.store, todoStream(key.todoId), todoDecider)).state
            : undefined;
        holder = read && read.status !== 'none' ? read : undefined;
        decision = decideKey(key, read, command, now, deps.keyStaleMs ?? 30_000);
        return decision.action === 'reserve' ? [decision.event] : [];
      },
      { retries: KEY_RACE_RETRIES },
    );
    switch (decision?.action) {
      case 'existing':
        if (holder === undefined) throw new Error('unreachable: live holder');
        return holder;
      case 'reserve':
        return undefined;
      case 'wait':
        if (performance.now() - started > waitMs) {
          throw new HooklineError(
            'unavailable',
            'another push with this key is still being recorded; retry in a moment',
          );
        }
        await sleep(Math.min(10 * 2 ** Math.min(round, 4), 160));
        break;
      default:
        throw new Error('unreachable: no key decision');
    }
  }
}
