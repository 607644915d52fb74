import { describe, expect, it } from 'vitest';
import { currentRevision } from '../../src/commands/cached-aggregate.ts';
import { readAggregate } from '../../src/commands/handle-command.ts';
import { endpointDecider } from '../../src/domain/endpoint/decide.ts';
import { endpointStream } from '../../src/domain/endpoint/events.ts';
import { type EndpointFacts, factsOf } from '../../src/domain/endpoint/state.ts';
import { todoStream } from '../../src/domain/todo/events.ts';
import { revokeEndpoint } from '../../src/endpoints/revoke.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import { newId } from '../../src/ids.ts';
import { createDeliveryRecorder } from '../../src/ingest/recorder.ts';
import { createDrain } from '../../src/todos/drain.ts';
import { type HandOff, handedOffTodo, handOffAppends } from '../../src/todos/hand-off.ts';
import { createKeptTodos } from '../../src/todos/kept.ts';
import { readStream } from '../http/api/client.ts';
import { pushTestTodo, useTestRuntime, vendTestEndpoint } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/**
 * A todo is claimable from the commit of its hand-off, not from the moment the todos read model
 * has it: the doorbell rings at the commit, and the agent it wakes must find the todo then. And the
 * revision checks that concurrent requests share are each read after their request began.
 */
describe.runIf(hasPg)('claimable at once, revisions shared (PostgreSQL)', () => {
  const suite = useTestRuntime('hookline_claimable_at_once');

  const vend = () => vendTestEndpoint(suite.runtime, 'claimable');

  /**
   * The store's own methods, counted, with the first ask's answer held back until released; with
   * `together: false` the store has no streamRevisions (as EventStoreDB's), so asks go one stream
   * at a time.
   */
  const held = (store: EventStore, together: boolean) => {
    const counter = { asks: 0, release: () => {} };
    const gate = new Promise<void>((r) => {
      counter.release = r;
    });
    const hold = async <T>(answer: Promise<T>): Promise<T> => {
      counter.asks++;
      const first = counter.asks === 1;
      const value = await answer;
      if (first) await gate;
      return value;
    };
    const counted = new Proxy(store, {
      get(target, key, receiver) {
        if (key === 'streamInfo') return (id: string) => hold(target.streamInfo(id));
        if (key === 'streamRevisions')
          return together ? (ids: readonly string[]) => hold(target.streamRevisions!(ids)) : undefined;
        return Reflect.get(target, key, receiver);
      },
    }) as EventStore;
    return { counted, counter };
  };

  for (const together of [true, false]) {
    it(`a revision asked while an older ask is under way is read after the caller began (${together ? 'streams asked together' : 'one stream at a time'})`, async () => {
      const { store, clock } = suite.runtime;
      expect(store.streamRevisions).toBeDefined();
      const ep = await vend();
      const other = await vend();
      const stream = endpointStream(ep.endpointId);
      const otherStream = endpointStream(other.endpointId);
      const before = (await store.streamInfo(stream)).revision;
      const { counted, counter } = held(store, together);

      const first = currentRevision(counted, stream);
      await new Promise((r) => setTimeout(r, 20)); // the first ask has been answered, and is held
      await revokeEndpoint({ store, clock }, { ref: ep.slug, operator: 'alice', human: 'alice' });
      const after = (await store.streamInfo(stream)).revision;
      expect(after).toBeGreaterThan(before);
      // Asked after the revoke committed, while the first ask is still under way: the callers
      // share the ask sent once the first ends, and all see the revoke.
      const later = Array.from({ length: 8 }, () => currentRevision(counted, stream));
      const otherLater = currentRevision(counted, otherStream);
      // Alone, the other stream's ask goes at once (nothing under way on it).
      expect(counter.asks).toBe(together ? 1 : 2);
      counter.release();
      expect(await first).toBe(before);
      expect(await Promise.all(later)).toEqual(Array(8).fill(after));
      expect(await otherLater).toBe((await store.streamInfo(otherStream)).revision);
      // Together: one ask for both streams; alone: one per stream.
      expect(counter.asks).toBe(together ? 2 : 3);
      expect(await currentRevision(counted, endpointStream('ep_none'))).toBe(-1n);
    });
  }

  it('claim_next takes a todo handed off here before the read model has it, after the older ones', async () => {
    const { store, clock, db } = suite.runtime;
    const ep = await vend();
    const caller = { endpointId: ep.endpointId, queues: ['inbox'] };
    const recorder = createDeliveryRecorder({ store, clock });
    // An older todo that the read model has.
    const older = await pushTestTodo(suite.runtime, ep.slug, { title: 'older' });
    await suite.runtime.projections.waitFor(await store.committedPosition(), { timeoutMs: 10_000 });
    await suite.runtime.projections.stop(); // the read model stays where it is from here on

    const endpoint = factsOf(
      (await readAggregate(store, endpointStream(ep.endpointId), endpointDecider)).state as EndpointFacts & {
        status: 'active';
      },
    );
    const todoId = newId('td');
    const handOff: HandOff = {
      todo: {
        todoId,
        endpoint,
        queue: 'inbox',
        kind: 'webhook',
        title: 'fresh',
        payload: { n: 1 },
        key: null,
        source: `webhook:${ep.webhookId}`,
        human: `webhook:${ep.webhookId}`,
      },
      facts: [],
    };
    const now = clock.now();
    const recorded = await recorder.record(
      {
        payload: new TextEncoder().encode('{"n":1}'),
        provider: `webhook:${ep.webhookId}`,
        family: 'webhook',
        trust_mode: 'token',
        verified: false,
        verify_detail: 'token ok',
        event_type: 'deploy',
        external_id: null,
        content_type: 'application/json',
        source_ip: null,
        headers: {},
        route: {
          endpoint_id: ep.endpointId,
          slug: ep.slug,
          queue: 'inbox',
          todo_id: todoId,
          kind: 'webhook',
        },
      },
      handOffAppends(handOff, 'stamped', now),
    );
    const keptTodos = createKeptTodos();
    keptTodos.keep(todoId, { state: handedOffTodo(handOff, recorded.ack.id, now)!, revision: 0n }, 7);

    const rows = await db
      .selectFrom('todos')
      .select(['id', 'state'])
      .where('endpoint_id', '=', ep.endpointId)
      .execute();
    expect(rows).toEqual([{ id: older.id, state: 'pending' }]); // the fresh todo is not in the read model

    const here = createDrain({ store, clock, db, kept: keptTodos });
    const claim = { queues: ['inbox'], sessionId: null, leaseMs: 60_000 };
    const first = await here.claimNext(caller, claim);
    expect(first?.todo.id).toBe(older.id); // the oldest first
    const second = await here.claimNext(caller, claim);
    expect(second?.todo.id).toBe(todoId);
    expect(second?.todo.status).toBe('claimed');
    expect(await here.claimNext(caller, claim)).toBeNull();
    // A drain that kept nothing goes by the read model alone: nothing it can take.
    expect(await createDrain({ store, clock, db }).claimNext(caller, claim)).toBeNull();
    const claims = (await readStream(store, todoStream(todoId))).filter((e) => e.type === 'TodoClaimed');
    expect(claims).toHaveLength(1);
  });
});
