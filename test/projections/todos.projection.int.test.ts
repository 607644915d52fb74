import { beforeEach, describe, expect, it } from 'vitest';
import { todosProjection } from '../../projections/todos.projection.ts';
import {
  expiredLeases,
  findTodo,
  operatorQueueCounts,
  pageOperatorTodos,
  pageTodos,
  pendingCandidates,
  queueCounts,
  todosUsingQueue,
} from '../../projections/todos.queries.ts';
import { projectionSpec, recorded, resetStreams } from '../support/projection-spec.ts';
import { postgresAvailable } from '../support/services.ts';

const t = (s: number) => new Date(Date.UTC(2026, 10, 22, 10, 0, s)).toISOString();
const created = (id: string, queue = 'inbox', kind = 'operator', s = 0) =>
  recorded(`todo-${id}`, {
    type: 'TodoCreated',
    data: {
      todo_id: id,
      endpoint_id: 'ep_1',
      slug: 'bot-aaaaaa',
      operator: 'admin',
      queue,
      kind,
      title: `title ${id}`,
      payload: { n: 1 },
      key: null,
      source: 'operator',
      event_id: 1,
      created_by: 'admin',
      created_at: t(s),
    },
  });
const claimed = (id: string, lease: string, until: number) =>
  recorded(`todo-${id}`, {
    type: 'TodoClaimed',
    data: {
      todo_id: id,
      endpoint_id: 'ep_1',
      lease_id: lease,
      session_id: null,
      claimed_at: t(10),
      lease_expires_at: t(until),
    },
  });

describe.runIf(await postgresAvailable())('todos read model: given events, then rows', () => {
  const spec = projectionSpec(todosProjection);
  beforeEach(resetStreams);

  it('follows a todo through claim, release, claim and completion', async () => {
    await spec
      .given(
        created('td_1'),
        claimed('td_1', 'ls_1', 40),
        recorded('todo-td_1', {
          type: 'TodoReleased',
          data: { todo_id: 'td_1', lease_id: 'ls_1', released_at: t(20), reason: null },
        }),
        claimed('td_1', 'ls_2', 60),
        recorded('todo-td_1', {
          type: 'TodoCompleted',
          data: { todo_id: 'td_1', lease_id: 'ls_2', completed_at: t(30), result: { ok: true } },
        }),
      )
      .thenRows(async (db) => {
        expect(await findTodo(db, 'td_1')).toMatchObject({
          state: 'completed',
          claimed_by: null,
          lease_expires_at: null,
          ended_at: new Date(t(30)),
        });
      });
  });

  it('serves claim_next its candidates, the expiry job its leases and the queue resource its counts', async () => {
    await spec
      .given(
        created('td_a', 'inbox', 'operator', 1),
        created('td_b', 'inbox', 'operator', 2),
        claimed('td_a', 'ls_a', 15),
      )
      .thenRows(async (db) => {
        const candidates = await pendingCandidates(db, {
          endpointId: 'ep_1',
          queues: ['inbox'],
          after: undefined,
          limit: 10,
        });
        expect(candidates.map((c) => c.id)).toEqual(['td_b']);
        expect(await expiredLeases(db, new Date(t(20)), 10)).toEqual([{ id: 'td_a', leaseId: 'ls_a' }]);
        expect(await queueCounts(db, 'ep_1', 'inbox')).toEqual({
          pending: 1,
          claimed: 1,
          oldestPendingAt: new Date(t(2)),
        });
        const page = await pageTodos(db, { endpointId: 'ep_1', queues: ['inbox'], limit: 1 });
        expect(page.map((r) => r.id)).toEqual(['td_a']);
      });
  });

  it('gives the console an operator’s queue counts by state and its todos newest first, with the lease holder', async () => {
    await spec
      .given(
        created('td_a', 'inbox', 'operator', 1),
        created('td_b', 'inbox', 'operator', 2),
        created('td_c', 'later', 'operator', 3),
        recorded('todo-td_a', {
          type: 'TodoClaimed',
          data: {
            todo_id: 'td_a',
            endpoint_id: 'ep_1',
            lease_id: 'ls_a',
            session_id: 'sess-1',
            claimed_at: t(10),
            lease_expires_at: t(70),
          },
        }),
      )
      .thenRows(async (db) => {
        expect(await operatorQueueCounts(db, 'admin')).toEqual(
          expect.arrayContaining([
            { endpoint_id: 'ep_1', queue: 'inbox', state: 'claimed', n: 1 },
            { endpoint_id: 'ep_1', queue: 'inbox', state: 'pending', n: 1 },
            { endpoint_id: 'ep_1', queue: 'later', state: 'pending', n: 1 },
          ]),
        );
        expect(await operatorQueueCounts(db, 'someone-else')).toEqual([]);
        const all = await pageOperatorTodos(db, { operator: 'admin', limit: 10 });
        expect(all.map((r) => r.id)).toEqual(['td_c', 'td_b', 'td_a']);
        expect(all[2]).toMatchObject({ holder_session: 'sess-1', attempts: 0, last_error: null });
        const inbox = await pageOperatorTodos(db, {
          operator: 'admin',
          endpointId: 'ep_1',
          queue: 'inbox',
          state: 'pending',
          limit: 10,
        });
        expect(inbox.map((r) => r.id)).toEqual(['td_b']);
        const older = await pageOperatorTodos(db, {
          operator: 'admin',
          before: { at: new Date(t(3)), id: 'td_c' },
          limit: 1,
        });
        expect(older.map((r) => r.id)).toEqual(['td_b']);
      });
  });

  it('a moved todo is listed, counted and claimable on its new queue only', async () => {
    await spec
      .given(
        created('td_1', 'deploys'),
        recorded('todo-td_1', {
          type: 'TodoMoved',
          data: {
            todo_id: 'td_1',
            from_queue: 'deploys',
            to_queue: 'inbox',
            moved_by: 'admin',
            moved_at: t(5),
          },
        }),
      )
      .thenRows(async (db) => {
        expect(await findTodo(db, 'td_1')).toMatchObject({ queue: 'inbox', state: 'pending' });
        const on = (queue: string) =>
          pendingCandidates(db, { endpointId: 'ep_1', queues: [queue], after: undefined, limit: 10 });
        expect((await on('inbox')).map((c) => c.id)).toEqual(['td_1']);
        expect(await on('deploys')).toEqual([]);
      });
  });

  it('gives claim_next the pending todos of several queues oldest first, page after page by (created_at, id)', async () => {
    await spec
      .given(
        created('td_1', 'inbox', 'operator', 1),
        created('td_2', 'deploys', 'operator', 2),
        created('td_3', 'alerts', 'operator', 2),
        created('td_4', 'inbox', 'operator', 3),
        created('td_5', 'deploys', 'operator', 4),
        created('td_6', 'inbox', 'operator', 5),
        created('td_7', 'other', 'operator', 0),
        claimed('td_4', 'ls_4', 40),
      )
      .thenRows(async (db) => {
        const queues = ['inbox', 'deploys', 'alerts'];
        const pages: string[][] = [];
        let after: { id: string; createdAt: Date } | undefined;
        for (;;) {
          const page = await pendingCandidates(db, { endpointId: 'ep_1', queues, after, limit: 2 });
          pages.push(page.map((c) => c.id));
          if (page.length < 2) break;
          after = page[page.length - 1];
        }
        // td_2 and td_3 share a created_at: the id decides. td_4 is claimed, td_7 in another queue.
        expect(pages).toEqual([['td_1', 'td_2'], ['td_3', 'td_5'], ['td_6']]);
        const two = await pendingCandidates(db, {
          endpointId: 'ep_1',
          queues: ['alerts', 'inbox'],
          limit: 10,
        });
        expect(two.map((c) => c.id)).toEqual(['td_1', 'td_3', 'td_6']);
      });
  });

  it('a failure that is not final returns the todo to pending', async () => {
    await spec
      .given(
        created('td_1'),
        claimed('td_1', 'ls_1', 40),
        recorded('todo-td_1', {
          type: 'TodoFailed',
          data: {
            todo_id: 'td_1',
            lease_id: 'ls_1',
            failed_at: t(20),
            reason: 'flaky',
            retryable: true,
            attempt: 1,
            max_attempts: 3,
            final: false,
          },
        }),
        created('td_q', 'quarantine', 'operator'),
      )
      .thenRows(async (db) => {
        expect(await findTodo(db, 'td_1')).toMatchObject({
          state: 'pending',
          ended_at: null,
          attempts: 1,
          last_error: 'flaky',
          holder_session: null,
        });
        expect(await todosUsingQueue(db, 'quarantine')).toEqual(['td_q']);
      });
  });
});

describe.runIf(await postgresAvailable())('todos read model: a batch in few statements', () => {
  const spec = projectionSpec(todosProjection);
  beforeEach(resetStreams);

  it("a batch's events leave the rows that applying them one at a time leaves", async () => {
    const failed = (id: string, lease: string, s: number, final: boolean) =>
      recorded(`todo-${id}`, {
        type: 'TodoFailed',
        data: {
          todo_id: id,
          lease_id: lease,
          failed_at: t(s),
          reason: `failed at ${s}`,
          retryable: !final,
          attempt: final ? 2 : 1,
          max_attempts: 2,
          final,
        },
      });
    const events = [
      created('td_a', 'inbox', 'operator', 1),
      created('td_b', 'deploys', 'operator', 2),
      claimed('td_a', 'ls_1', 40),
      failed('td_a', 'ls_1', 11, false),
      recorded('todo-td_b', {
        type: 'TodoMoved',
        data: {
          todo_id: 'td_b',
          from_queue: 'deploys',
          to_queue: 'inbox',
          moved_by: 'admin',
          moved_at: t(12),
        },
      }),
      claimed('td_a', 'ls_2', 50),
      created('td_c', 'inbox', 'operator', 3),
      claimed('td_b', 'ls_3', 55),
      recorded('todo-td_b', {
        type: 'TodoCompleted',
        data: { todo_id: 'td_b', lease_id: 'ls_3', completed_at: t(30), result: null },
      }),
      failed('td_a', 'ls_2', 31, true),
      claimed('td_c', 'ls_4', 70),
    ];
    const all = (db: Parameters<Parameters<ReturnType<typeof spec.given>['thenRows']>[0]>[0]) =>
      db.selectFrom('todos').selectAll().orderBy('id').execute();
    let together: unknown[] = [];
    await spec.given(...events).thenRows(async (db) => {
      together = await all(db);
    });
    await spec.given(events[0]!).thenRows(async (db) => {
      for (const e of events.slice(1))
        await db.transaction().execute((trx) => todosProjection.apply(trx, [e]));
      expect(together).toEqual(await all(db));
    });
    expect(together).toHaveLength(3);
    expect(together).toMatchObject([
      { id: 'td_a', state: 'failed', attempts: 2, last_error: 'failed at 31', claimed_by: null },
      { id: 'td_b', state: 'completed', queue: 'inbox', ended_at: new Date(t(30)) },
      { id: 'td_c', state: 'claimed', claimed_by: 'ls_4' },
    ]);
  });
});
