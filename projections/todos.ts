import type { ColumnType, Kysely, Selectable, Updateable } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { decodeOneOf, isOneOfTypes } from '../src/domain/events.ts';
import { type DrainEvent, TODO_EVENT_TYPES } from '../src/domain/todo/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './types.ts';

/**
 * One row per todo (stream `todo-<id>`), for list_todos, get_todo and the screens. The drain
 * verbs' events update `state` and the claim columns.
 */
export interface TodosTable {
  id: string;
  endpoint_id: string;
  slug: string;
  operator: string;
  queue: string;
  kind: string;
  title: string;
  payload: ColumnType<unknown, string, string>;
  key: string | null;
  state: string;
  source: string;
  event_id: ColumnType<bigint | number, number, number>;
  created_by: string;
  created_at: ColumnType<Date, Date, Date>;
  updated_at: ColumnType<Date, Date, Date>;
  /** Drain moves (claim, heartbeat): who holds the todo and until when. */
  claimed_by: string | null;
  lease_expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  ended_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface TodoTables {
  todos: TodosTable;
}

export type TodoRow = Selectable<TodosTable>;

export const todosProjection: Projection = {
  name: 'todos',
  version: 1,
  tables: ['todos'],
  async createTables(db) {
    await db.schema
      .createTable('todos')
      .ifNotExists()
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('endpoint_id', 'text', (c) => c.notNull())
      .addColumn('slug', 'text', (c) => c.notNull())
      .addColumn('operator', 'text', (c) => c.notNull())
      .addColumn('queue', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('title', 'text', (c) => c.notNull())
      .addColumn('payload', 'jsonb', (c) => c.notNull())
      .addColumn('key', 'text')
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('event_id', 'bigint', (c) => c.notNull())
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_at', 'timestamptz', (c) => c.notNull())
      .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
      .addColumn('claimed_by', 'text')
      .addColumn('lease_expires_at', 'timestamptz')
      .addColumn('ended_at', 'timestamptz')
      .execute();
    await db.schema
      .createIndex('todos_queue_idx')
      .ifNotExists()
      .on('todos')
      .columns(['endpoint_id', 'queue', 'state', 'created_at'])
      .execute();
    // The lease-expiry job's look-up (src/mcp/lease-expiry.ts).
    await db.schema
      .createIndex('todos_lease_idx')
      .ifNotExists()
      .on('todos')
      .columns(['state', 'lease_expires_at'])
      .execute();
  },
  handles: (e) => e.streamId.startsWith('todo-') && isOneOfTypes(TODO_EVENT_TYPES, e.type),
  async apply(db, events) {
    for (const e of events) await applyTodoEvent(db, e);
  },
};

async function applyTodoEvent(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  const event = decodeOneOf(e, TODO_EVENT_TYPES);
  switch (event.type) {
    case 'TodoCreated': {
      const d = event.data;
      const at = new Date(d.created_at);
      await db
        .insertInto('todos')
        .values({
          id: d.todo_id,
          endpoint_id: d.endpoint_id,
          slug: d.slug,
          operator: d.operator,
          queue: d.queue,
          kind: d.kind,
          title: d.title,
          payload: JSON.stringify(d.payload ?? null),
          key: d.key,
          state: 'pending',
          source: d.source,
          event_id: d.event_id,
          created_by: d.created_by,
          created_at: at,
          updated_at: at,
          claimed_by: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      return;
    }
    default:
      await applyDrainEvent(db, event);
  }
}

/** The drain moves (src/domain/todo/events.ts): state, lease holder and expiry, end. */
async function applyDrainEvent(db: Kysely<Database>, event: DrainEvent): Promise<void> {
  const update = (id: string, at: string, set: Updateable<TodosTable>) =>
    db
      .updateTable('todos')
      .set({ ...set, updated_at: new Date(at) })
      .where('id', '=', id)
      .execute();
  switch (event.type) {
    case 'TodoClaimed': {
      const d = event.data;
      await update(d.todo_id, d.claimed_at, {
        state: 'claimed',
        claimed_by: d.lease_id,
        lease_expires_at: new Date(d.lease_expires_at),
      });
      return;
    }
    case 'TodoLeaseExtended':
      await update(event.data.todo_id, event.data.extended_at, {
        lease_expires_at: new Date(event.data.lease_expires_at),
      });
      return;
    case 'TodoReleased':
      await update(event.data.todo_id, event.data.released_at, {
        state: 'pending',
        claimed_by: null,
        lease_expires_at: null,
      });
      return;
    case 'TodoLeaseExpired':
      await update(event.data.todo_id, event.data.expired_at, {
        state: 'pending',
        claimed_by: null,
        lease_expires_at: null,
      });
      return;
    case 'TodoCompleted':
      await update(event.data.todo_id, event.data.completed_at, {
        state: 'completed',
        claimed_by: null,
        lease_expires_at: null,
        ended_at: new Date(event.data.completed_at),
      });
      return;
    case 'TodoFailed': {
      const d = event.data;
      await update(d.todo_id, d.failed_at, {
        state: d.final ? 'failed' : 'pending',
        claimed_by: null,
        lease_expires_at: null,
        ended_at: d.final ? new Date(d.failed_at) : null,
      });
      return;
    }
    default: {
      const never: never = event;
      return never;
    }
  }
}

export function findTodo(db: Kysely<Database>, id: string): Promise<TodoRow | undefined> {
  return db.selectFrom('todos').selectAll().where('id', '=', id).executeTakeFirst();
}

/** An endpoint's todos on one queue, oldest first (what list_todos shows). */
export function listTodos(
  db: Kysely<Database>,
  filter: {
    readonly endpointId: string;
    readonly queue?: string;
    readonly states?: readonly string[];
    readonly limit?: number;
  },
): Promise<TodoRow[]> {
  let q = db.selectFrom('todos').selectAll().where('endpoint_id', '=', filter.endpointId);
  if (filter.queue) q = q.where('queue', '=', filter.queue);
  if (filter.states && filter.states.length > 0) q = q.where('state', 'in', [...filter.states]);
  return q
    .orderBy('created_at')
    .orderBy('id')
    .limit(filter.limit ?? 100)
    .execute();
}

export interface Candidate {
  readonly id: string;
  readonly createdAt: Date;
}

/**
 * Pending todos of an endpoint's queues, oldest first, strictly after a (created_at, id) cursor:
 * claim_next's candidates. The read model may lag; the claim itself checks the todo's stream.
 */
export async function pendingCandidates(
  db: Kysely<Database>,
  filter: {
    readonly endpointId: string;
    readonly queues: readonly string[];
    readonly after: Candidate | undefined;
    readonly limit: number;
  },
): Promise<Candidate[]> {
  if (filter.queues.length === 0) return [];
  let q = db
    .selectFrom('todos')
    .select(['id', 'created_at'])
    .where('endpoint_id', '=', filter.endpointId)
    .where('queue', 'in', [...filter.queues])
    .where('state', '=', 'pending');
  const after = filter.after;
  if (after) {
    q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(after.createdAt, after.id)));
  }
  const rows = await q.orderBy('created_at').orderBy('id').limit(filter.limit).execute();
  return rows.map((r) => ({ id: r.id, createdAt: new Date(r.created_at) }));
}

/** Claimed todos whose lease ran out by `now`: the expiry job's work list. */
export async function expiredLeases(
  db: Kysely<Database>,
  now: Date,
  limit: number,
): Promise<{ readonly id: string; readonly leaseId: string }[]> {
  const rows = await db
    .selectFrom('todos')
    .select(['id', 'claimed_by'])
    .where('state', '=', 'claimed')
    .where('lease_expires_at', '<=', now)
    .orderBy('lease_expires_at')
    .limit(limit)
    .execute();
  return rows.flatMap((r) => (r.claimed_by ? [{ id: r.id, leaseId: r.claimed_by }] : []));
}
