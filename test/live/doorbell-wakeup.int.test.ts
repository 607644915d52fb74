import { firstValueFrom, type Observable, filter as rxFilter, take, timeout } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { openPostgres, type SqlDatabase } from '../../src/db/open.ts';
import { DELIVERIES_STREAM } from '../../src/domain/delivery/events.ts';
import { decodeEvent } from '../../src/domain/events.ts';
import { jsonEvent } from '../../src/eventstore/codec.ts';
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { newId } from '../../src/ids.ts';
import { createLiveHub, type LiveHub } from '../../src/live/hub.ts';
import { createLogger } from '../../src/logger.ts';
import { handOffAppends } from '../../src/todos/hand-off.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

/**
 * Issue 23, point 3: a doorbell reaches the process's one `$all` reader (the live hub, which feeds
 * every MCP session's notifications) because its append committed, not because a poll came round.
 * The reading store here polls once an hour, far beyond the test's timeout: a ring can only arrive
 * through a wake-up on commit, in-process for this store's own appends, and through PostgreSQL
 * LISTEN/NOTIFY for another process's (a second store on its own connections).
 */
const hasPg = await postgresAvailable();
const AN_HOUR = 3_600_000;

describe.runIf(hasPg)('the doorbell rides the wake-up on commit, not the poll (PostgreSQL)', () => {
  let database: TestDatabase;
  const handles: SqlDatabase[] = [];
  const stores: EventStore[] = [];
  let reader: EventStore;
  let other: EventStore;
  let hub: LiveHub;

  const open = async () => {
    const sql = openPostgres(database.url);
    handles.push(sql);
    const store = await createSqlEventStore(sql, { pollMs: AN_HOUR });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    database = await createTestDatabase('hookline_doorbell');
    const migrator = openPostgres(database.url, { max: 1 });
    await migrateToLatest(migrator.db);
    await migrator.close();
    reader = await open();
    other = await open();
    hub = createLiveHub({
      store: reader,
      clock: systemClock,
      logger: createLogger({ logLevel: 'silent' }),
      loadStatus: async (connection) => ({
        connection,
        generated_at: new Date().toISOString(),
        providers: [],
      }),
    });
    await hub.start();
  });
  afterAll(async () => {
    await hub?.stop();
    for (const s of stores) await s.close();
    for (const h of handles) await h.close();
    await database?.drop();
  });

  /** The ring of `todoId` on the hub's doorbells, within 20 s (well inside the poll's hour). */
  const ringOf = (doorbells$: Observable<RecordedEvent>, todoId: string) =>
    firstValueFrom(
      doorbells$.pipe(
        rxFilter((e) => {
          const event = decodeEvent(e);
          return event.type === 'DoorbellRung' && event.data.todo_id === todoId;
        }),
        take(1),
        timeout(20_000),
      ),
    );

  /** A delivery with its hand-off, as a receiver appends it: one atomic append. */
  async function handOff(store: EventStore, endpointId: string, todoId: string) {
    const now = new Date();
    const appends = handOffAppends(
      {
        todo: {
          todoId,
          endpoint: {
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
            vendedAt: now,
            friendId: null,
            acceptFriendRequests: false,
          },
          queue: 'inbox',
          kind: 'webhook',
          title: 'ring',
          payload: { n: 1 },
          key: null,
          source: 'webhook:wh_test',
          human: 'webhook:wh_test',
        },
        facts: [],
      },
      'stamped',
      now,
    );
    const [delivered] = await store.appendAtomic!([
      { streamId: DELIVERIES_STREAM, events: [jsonEvent('DeliveryProbe', { n: 1 })] },
      ...appends,
    ]);
    return Number(delivered!.nextExpectedRevision) + 1;
  }

  it("a hand-off appended by this process rings the hub's doorbell stream, the ring naming its delivery", async () => {
    const [endpointId, todoId] = [newId('ep'), newId('td')];
    const heard = ringOf(hub.doorbells$, todoId);
    const eventId = await handOff(reader, endpointId, todoId);
    expect(decodeEvent(await heard)).toMatchObject({
      type: 'DoorbellRung',
      data: { endpoint_id: endpointId, todo_id: todoId, event_id: eventId },
    });
  });

  it('a hand-off appended by another process wakes this one through LISTEN/NOTIFY', async () => {
    const [endpointId, todoId] = [newId('ep'), newId('td')];
    const heard = ringOf(hub.doorbells$, todoId);
    await handOff(other, endpointId, todoId);
    expect(decodeEvent(await heard)).toMatchObject({ data: { todo_id: todoId } });
  });
});
