import { describe, expect, it } from 'vitest';
import { findEndpointBySlug } from '../../projections/endpoints.queries.ts';
import { findTodo } from '../../projections/todos.queries.ts';
import { endpointStream } from '../../src/domain/endpoint/events.ts';
import { ALL_VERBS, type Verb } from '../../src/domain/endpoint/verbs.ts';
import { DomainError } from '../../src/domain/errors.ts';
import { todoStream } from '../../src/domain/todo/events.ts';
import { changeEndpointScope, type ScopeChange } from '../../src/endpoints/change.ts';
import { revokeEndpoint } from '../../src/endpoints/revoke.ts';
import { vendEndpoint } from '../../src/endpoints/vend.ts';
import { HooklineError } from '../../src/errors.ts';
import type { RecordedEvent } from '../../src/eventstore/port.ts';
import { createFollowUps } from '../../src/follow-up.ts';
import { createDeliveryRecorder } from '../../src/ingest/recorder.ts';
import { createDrain } from '../../src/todos/drain.ts';
import { pushTodo } from '../../src/todos/push.ts';
import { readStream } from '../http/api/client.ts';
import { useTestRuntime } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/**
 * changeEndpointScope (PATCH /api/v1/endpoints/{ref}): queues added or removed, verbs narrowed,
 * the live todos of a removed queue counted in the todos read model and moved with `move_to`.
 */
describe.runIf(hasPg)('changeEndpointScope (PostgreSQL)', () => {
  const suite = useTestRuntime('hookline_endpoints_change');

  const deps = () => ({ store: suite.runtime.store, clock: suite.runtime.clock, db: suite.runtime.db });
  const vend = (queues: string[] = ['inbox', 'later'], verbs: Verb[] = [...ALL_VERBS]) =>
    vendEndpoint(
      { ...deps(), checkReplayTarget: async () => {} },
      { operator: 'alice', human: 'alice', name: 'scope', queues, verbs, expiresAt: null, replayTargets: [] },
    );
  const change = (ref: string, over: Partial<ScopeChange>) =>
    changeEndpointScope(deps(), { ref, operator: 'alice', human: 'alice@example.test', ...over });
  /** As the API does before it changes a scope: the todos read model has every todo so far. */
  const settle = async () =>
    suite.runtime.projections.waitFor(await suite.runtime.store.committedPosition(), { timeoutMs: 10_000 });
  const push = (slug: string, queue: string, title: string) => {
    const { store, clock, logger } = suite.runtime;
    return pushTodo(
      {
        store,
        clock,
        recorder: createDeliveryRecorder({ store, clock }),
        followUps: createFollowUps({ logger }),
      },
      {
        ref: slug,
        operator: 'alice',
        human: 'alice',
        title,
        queue,
        kind: 'k',
        payload: null,
        key: null,
        sourceIp: null,
        headers: {},
      },
    );
  };
  const types = async (endpointId: string) =>
    (await readStream(suite.runtime.store, endpointStream(endpointId))).map((e) => e.type);

  it('adds a queue: one EndpointScopeChanged, the state and the endpoints read model show it', async () => {
    const ep = await vend(['inbox']);
    const changed = await change(ep.slug, { queues: ['inbox', 'builds'] });
    expect(changed.moved).toBe(0);
    expect(changed.position).toBeTypeOf('string');
    expect(changed.state.status).toBe('active');
    expect(changed.state.queues).toEqual(['inbox', 'builds']);
    const events = await readStream(suite.runtime.store, endpointStream(ep.endpointId));
    expect(events.map((e) => e.type)).toEqual(['EndpointVended', 'EndpointScopeChanged']);
    expect(events[1]!.data).toMatchObject({
      endpoint_id: ep.endpointId,
      queues: ['inbox', 'builds'],
      verbs: [...ALL_VERBS],
      removed_queues: [],
      moved_to: null,
      changed_by: 'alice@example.test',
    });

    await suite.runtime.projections.waitFor(changed.position!, {
      projection: 'endpoints',
      timeoutMs: 10_000,
    });
    expect((await findEndpointBySlug(suite.runtime.db, ep.slug))?.queues).toEqual(['inbox', 'builds']);
  });

  it('by ep_ id as well as by slug; the same scope again appends nothing', async () => {
    const ep = await vend(['inbox']);
    const first = await change(ep.endpointId, { queues: ['inbox', 'b'] });
    expect(first.state.queues).toEqual(['inbox', 'b']);
    const again = await change(ep.slug, { queues: ['inbox', 'b'] });
    expect(again.position).toBeUndefined();
    expect(again.moved).toBe(0);
    expect(await types(ep.endpointId)).toEqual(['EndpointVended', 'EndpointScopeChanged']);
  });

  it('removing a queue with live todos and no move_to is a 409 naming the queue and its count; nothing moves', async () => {
    const { store, clock, db } = suite.runtime;
    const ep = await vend();
    const pending = await push(ep.slug, 'later', 'pending one');
    const claimedOne = await push(ep.slug, 'later', 'claimed one');
    const done = await push(ep.slug, 'later', 'completed one');
    const drain = createDrain({ store, clock, db });
    const caller = { endpointId: ep.endpointId, queues: ['inbox', 'later'] };
    await drain.claim(caller, { todoId: claimedOne.id, sessionId: null, leaseMs: 60_000 });
    const claimedDone = await drain.claim(caller, { todoId: done.id, sessionId: null, leaseMs: 60_000 });
    await drain.complete(caller, { todoId: done.id, leaseId: claimedDone.todo.lease!.id, result: null });
    await settle();

    const refused = await change(ep.slug, { queues: ['inbox'] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DomainError);
    expect((refused as DomainError).code).toBe('conflict');
    expect((refused as DomainError).extensions.field).toBe('queues');
    // The completed todo is not live: two, not three.
    expect((refused as DomainError).message).toMatch(
      /^queue later \(2\) still holds pending or claimed todos/,
    );
    expect(await types(ep.endpointId)).toEqual(['EndpointVended']);
    for (const id of [pending.id, claimedOne.id]) {
      expect((await readStream(store, todoStream(id))).map((e) => e.type)).not.toContain('TodoMoved');
    }
  });

  it('with move_to, each live todo moves first (one TodoMoved), then the change; the read models follow', async () => {
    const { store, clock, db, projections } = suite.runtime;
    const ep = await vend(['inbox', 'later', 'old']);
    const a = await push(ep.slug, 'later', 'a');
    const b = await push(ep.slug, 'old', 'b');
    const stays = await push(ep.slug, 'inbox', 'stays');
    const drain = createDrain({ store, clock, db });
    await drain.claim(
      { endpointId: ep.endpointId, queues: ['later'] },
      { todoId: a.id, sessionId: null, leaseMs: 60_000 },
    );
    await settle();

    const changed = await change(ep.slug, { queues: ['inbox'], moveTo: 'inbox' });
    expect(changed.moved).toBe(2);
    expect(changed.state.queues).toEqual(['inbox']);
    const events = await readStream(store, endpointStream(ep.endpointId));
    expect(events.at(-1)!.data).toMatchObject({ removed_queues: ['later', 'old'], moved_to: 'inbox' });
    for (const [todo, from] of [
      [a, 'later'],
      [b, 'old'],
    ] as const) {
      const moved = (await readStream(store, todoStream(todo.id))).filter((e) => e.type === 'TodoMoved');
      expect(moved.map((e) => e.data)).toEqual([
        expect.objectContaining({ todo_id: todo.id, from_queue: from, to_queue: 'inbox' }),
      ]);
    }
    expect((await readStream(store, todoStream(stays.id))).map((e) => e.type)).not.toContain('TodoMoved');
    // Each TodoMoved was committed before the endpoint's change.
    const changeAt = (await lastEvent(endpointStream(ep.endpointId))).position;
    for (const todo of [a, b]) {
      const moveAt = (await lastEvent(todoStream(todo.id))).position;
      expect(store.comparePositions(moveAt, changeAt)).toBeLessThan(0);
    }

    await projections.waitFor(changed.position!, { timeoutMs: 10_000 });
    expect((await findTodo(db, a.id))?.queue).toBe('inbox');
    expect((await findTodo(db, a.id))?.state).toBe('claimed');
    expect((await findTodo(db, b.id))?.queue).toBe('inbox');
    expect((await findEndpointBySlug(db, ep.slug))?.queues).toEqual(['inbox']);
  });

  async function lastEvent(streamId: string): Promise<RecordedEvent> {
    for await (const e of suite.runtime.store.readStream(streamId, { direction: 'backwards', maxCount: 1 }))
      return e;
    throw new Error(`${streamId} is empty`);
  }

  it('move_to must be one of the new queues; refused, nothing moves', async () => {
    const ep = await vend();
    const t = await push(ep.slug, 'later', 't');
    await settle();
    const refused = await change(ep.slug, { queues: ['inbox'], moveTo: 'later' }).catch((e: unknown) => e);
    expect((refused as DomainError).code).toBe('bad_request');
    expect((refused as DomainError).extensions.field).toBe('move_to');
    expect((await readStream(suite.runtime.store, todoStream(t.id))).map((e) => e.type)).not.toContain(
      'TodoMoved',
    );
    expect(await types(ep.endpointId)).toEqual(['EndpointVended']);
  });

  it('removing an empty queue needs no move_to', async () => {
    const ep = await vend();
    await settle();
    const changed = await change(ep.slug, { queues: ['later'] });
    expect(changed.state.queues).toEqual(['later']);
    expect((await readStream(suite.runtime.store, endpointStream(ep.endpointId))).at(-1)!.data).toMatchObject(
      {
        removed_queues: ['inbox'],
        moved_to: null,
      },
    );
  });

  it('verbs only narrow: a subset is recorded, a verb not held or none at all is refused', async () => {
    const ep = await vend(['inbox'], ['list_todos', 'claim_next', 'complete']);
    const narrowed = await change(ep.slug, { verbs: ['list_todos', 'claim_next'] });
    expect(narrowed.state.verbs).toEqual(['list_todos', 'claim_next']);
    expect(narrowed.state.queues).toEqual(['inbox']);

    const wider = await change(ep.slug, { verbs: ['list_todos', 'complete'] }).catch((e: unknown) => e);
    expect((wider as DomainError).code).toBe('bad_request');
    expect((wider as DomainError).extensions.field).toBe('verbs');
    expect((wider as DomainError).message).toContain('does not hold complete');

    const none = await change(ep.slug, { verbs: [] }).catch((e: unknown) => e);
    expect((none as DomainError).extensions.field).toBe('verbs');
    expect(await types(ep.endpointId)).toEqual(['EndpointVended', 'EndpointScopeChanged']);
  });

  it('refuses quarantine, an empty change, a revoked endpoint, and another operator like an unknown one', async () => {
    const ep = await vend(['inbox']);
    const quarantine = await change(ep.slug, { queues: ['inbox', 'quarantine'] }).catch((e: unknown) => e);
    expect((quarantine as DomainError).code).toBe('bad_request');
    expect((quarantine as DomainError).extensions.field).toBe('queues');

    const nothing = await change(ep.slug, {}).catch((e: unknown) => e);
    expect((nothing as DomainError).code).toBe('bad_request');

    const bobs = await changeEndpointScope(deps(), {
      ref: ep.slug,
      operator: 'bob',
      human: 'bob',
      queues: ['x'],
    }).catch((e: unknown) => e);
    const unknown = await change('no-such-slug', { queues: ['x'] }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(HooklineError);
    expect([(bobs as DomainError).code, (bobs as DomainError).message]).toEqual([
      (unknown as HooklineError).code,
      (unknown as HooklineError).message,
    ]);

    await revokeEndpoint(deps(), { ref: ep.slug, operator: 'alice', human: 'alice' });
    const revoked = await change(ep.slug, { queues: ['x'] }).catch((e: unknown) => e);
    expect((revoked as DomainError).code).toBe('endpoint_revoked');
    expect(await types(ep.endpointId)).toEqual(['EndpointVended', 'EndpointRevoked']);
  });
});
