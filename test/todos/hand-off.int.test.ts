import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { openPostgres, type SqlDatabase } from '../../src/db/open.ts';
import type { EndpointFacts } from '../../src/domain/endpoint/state.ts';
import { parseData } from '../../src/eventstore/codec.ts';
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { newId } from '../../src/ids.ts';
import { createDeliveryRecorder } from '../../src/ingest/recorder.ts';
import { appendHandOff, type HandOff, handOffAppends } from '../../src/todos/hand-off.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

/**
 * Issue 23, point 2: the hand-off (todo, ring, disposition) written with its delivery in one atomic
 * append names the delivery's event id, which only the append learns; written after a delivery
 * already in the log, it takes the known id, in one append where the store has multi-stream
 * transactions and one append after another where it has not (EventStoreDB: here the same SQL
 * store without `appendAtomic`). Either way a second writer of the same todo writes nothing.
 */
const hasPg = await postgresAvailable();

describe.runIf(hasPg)('the hand-off of a delivery', () => {
  let database: TestDatabase;
  let sql: SqlDatabase;
  let store: EventStore;

  beforeAll(async () => {
    database = await createTestDatabase('hookline_handoff');
    sql = openPostgres(database.url);
    await migrateToLatest(sql.db);
    store = await createSqlEventStore(sql);
  });
  afterAll(async () => {
    await store?.close();
    await sql?.close();
    await database?.drop();
  });

  const read = async (streamId: string): Promise<RecordedEvent[]> => {
    const events: RecordedEvent[] = [];
    for await (const e of store.readStream(streamId)) events.push(e);
    return events;
  };
  const data = async (streamId: string) =>
    (await read(streamId)).map((e) => ({ type: e.type, ...parseData<Record<string, unknown>>(e) }));

  function handOff(endpointId: string, todoId: string): HandOff {
    const endpoint: EndpointFacts = {
      id: endpointId,
      slug: 'bell-abc123',
      agentId: 'ag_test',
      agentName: 'bell',
      operator: 'alice',
      queues: ['inbox'],
      verbs: [],
      tokenHash: 'x',
      webhookId: 'wh_test',
      replayTargets: [],
      expiresAt: null,
      vendedAt: new Date(),
      friendId: null,
      acceptFriendRequests: false,
    };
    return {
      todo: {
        todoId,
        endpoint,
        queue: 'inbox',
        kind: 'webhook',
        title: 'deploy',
        payload: { n: 1 },
        key: null,
        source: 'webhook:wh_test',
        human: 'webhook:wh_test',
      },
      facts: [
        {
          streamId: `dispositions-${endpointId}`,
          event: {
            type: 'DeliveryDisposed',
            data: {
              event_id: 0,
              webhook_id: 'wh_test',
              endpoint_id: endpointId,
              operator: 'alice',
              disposition: 'routed',
              queue: 'inbox',
              todo_id: todoId,
              rule: null,
              reason: null,
              message: null,
              rules_version: 1,
              disposed_at: new Date().toISOString(),
            },
          },
        },
      ],
    };
  }

  const delivery = (todoId: string, endpointId: string, externalId: string | null) => ({
    payload: new TextEncoder().encode('{"type":"deploy"}'),
    provider: 'webhook:wh_test',
    family: 'webhook' as const,
    trust_mode: 'token' as const,
    verified: false,
    verify_detail: 'token ok',
    event_type: 'deploy',
    external_id: externalId,
    content_type: 'application/json',
    source_ip: null,
    headers: {},
    route: { endpoint_id: endpointId, slug: 'bell-abc123', queue: 'inbox', todo_id: todoId, kind: 'webhook' },
  });

  it('with its delivery: 16 at once, each todo, ring and disposition names its own delivery; a duplicate writes none', async () => {
    const recorder = createDeliveryRecorder({ store, clock: systemClock });
    const cases = Array.from({ length: 16 }, () => ({ endpointId: newId('ep'), todoId: newId('td') }));
    const recorded = await Promise.all(
      cases.map(({ endpointId, todoId }) =>
        recorder.record(
          delivery(todoId, endpointId, `msg-${todoId}`),
          handOffAppends(handOff(endpointId, todoId), 'stamped', new Date()),
        ),
      ),
    );
    for (const [i, { endpointId, todoId }] of cases.entries()) {
      const eventId = recorded[i]!.ack.id;
      expect(recorded[i]!.also).toHaveLength(3);
      expect(await data(`todo-${todoId}`)).toMatchObject([
        { type: 'TodoCreated', event_id: eventId, title: 'deploy' },
      ]);
      expect(await data(`doorbell-${endpointId}`)).toMatchObject([
        { type: 'DoorbellRung', todo_id: todoId, event_id: eventId },
      ]);
      expect(await data(`dispositions-${endpointId}`)).toMatchObject([
        { type: 'DeliveryDisposed', todo_id: todoId, event_id: eventId },
      ]);
    }
    // The same delivery again (its external id): the original's answer, and no second todo or ring.
    const { endpointId, todoId } = cases[0]!;
    const again = await recorder.record(
      delivery(newId('td'), endpointId, `msg-${todoId}`),
      handOffAppends(handOff(endpointId, newId('td')), 'stamped', new Date()),
    );
    expect(again).toMatchObject({ duplicate: true, also: [] });
    expect(again.ack.id).toBe(recorded[0]!.ack.id);
    expect(await read(`doorbell-${endpointId}`)).toHaveLength(1);
  });

  it.each([
    ['in one append', () => store],
    [
      'one append after another, on a store without multi-stream transactions',
      () => ({ ...store, appendAtomic: undefined }),
    ],
  ])(
    'after a delivery already in the log, %s: the known event id; a second writer writes nothing',
    async (_, target) => {
      const [endpointId, todoId] = [newId('ep'), newId('td')];
      const original = await createDeliveryRecorder({ store, clock: systemClock }).record(
        delivery(todoId, endpointId, null),
      );
      const steps: string[] = [];
      const first = await appendHandOff(
        target(),
        handOff(endpointId, todoId),
        original.ack.id,
        new Date(),
        (s) => steps.push(s),
      );
      expect(first).toBe(true);
      expect(steps.length).toBeGreaterThan(0);
      expect(await data(`todo-${todoId}`)).toMatchObject([{ event_id: original.ack.id }]);
      expect(await data(`doorbell-${endpointId}`)).toMatchObject([{ event_id: original.ack.id }]);
      expect(await data(`dispositions-${endpointId}`)).toMatchObject([{ event_id: original.ack.id }]);
      const second = await appendHandOff(target(), handOff(endpointId, todoId), original.ack.id, new Date());
      expect(second).toBe(false);
      expect(await read(`doorbell-${endpointId}`)).toHaveLength(1);
      expect(await read(`dispositions-${endpointId}`)).toHaveLength(1);
    },
  );
});
