import { type Insertable, type Kysely, sql, type Updateable } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { decodeOneOf, isOneOfTypes } from '../src/domain/events.ts';
import { type DrainEvent, TODO_EVENT_TYPES, type TodoEvent } from '../src/domain/todo/events.ts';
import type { Projection } from './engine/types.ts';
import { jsonbSafe, textSafe } from './pg-safe.ts';
import { createTodoTables, type TodosTable } from './todos.table.ts';

export const todosProjection: Projection = {
  name: 'todos',
  // 3: payload_json, the payload that jsonb refuses (a NUL character). 4: claim_next's index in
  // (created_at, id) order (todos.table.ts).
  version: 4,
  tables: ['todos'],
  createTables: createTodoTables,
  handles: (e) => e.streamId.startsWith('todo-') && isOneOfTypes(TODO_EVENT_TYPES, e.type),
  /**
   * A batch's events in at most two statements: the todos it creates in one insert, then one
   * update of every other todo it touches, each with every column its events set, in their order
   * (each event sets columns to values, so the last value of a column is the one sequential
   * updates leave). A claim and a completion arrive tens of milliseconds apart, so a batch touches
   * several todos once each, not one todo several times: one statement for all of them (issue 23).
   */
  async apply(db, events) {
    const created: Insertable<TodosTable>[] = [];
    const updates = new Map<string, Updateable<TodosTable>>();
    for (const e of events) {
      const event = decodeOneOf(e, TODO_EVENT_TYPES);
      if (event.type === 'TodoCreated') {
        created.push(rowOf(event.data));
        continue;
      }
      const [todoId, set] = changeOf(event);
      const before = updates.get(todoId);
      updates.set(todoId, before ? { ...before, ...set } : set);
    }
    if (created.length > 0)
      await db
        .insertInto('todos')
        .values(created)
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    if (updates.size > 0) await updateTodos(db, updates);
  },
};

/** The columns a later event sets (changeOf), and their SQL types. */
const CHANGED = {
  queue: 'text',
  state: 'text',
  claimed_by: 'text',
  holder_session: 'text',
  lease_expires_at: 'timestamptz',
  ended_at: 'timestamptz',
  attempts: 'integer',
  last_error: 'text',
  updated_at: 'timestamptz',
} as const satisfies Partial<Record<keyof TodosTable, string>>;

/**
 * One update of many todos, each with its own set of columns: the changes travel as one jsonb
 * array of objects holding only the columns set (a column absent from a todo's object keeps its
 * value; one present as null is set to null).
 */
async function updateTodos(db: Kysely<Database>, updates: ReadonlyMap<string, Updateable<TodosTable>>) {
  const changes = [...updates].map(([id, set]) => {
    const row: Record<string, unknown> = { id };
    for (const [column, value] of Object.entries(set))
      row[column] = value instanceof Date ? value.toISOString() : value;
    return row;
  });
  const set = Object.fromEntries(
    Object.entries(CHANGED).map(([column, type]) => [
      column,
      sql`case when v.value ? ${column} then (v.value ->> ${column})::${sql.raw(type)} else ${sql.ref(`todos.${column}`)} end`,
    ]),
  );
  await db
    .updateTable('todos')
    .from(sql`jsonb_array_elements(${JSON.stringify(changes)}::jsonb)`.as('v'))
    .set(set)
    .where(sql<boolean>`todos.id = v.value ->> 'id'`)
    .execute();
}

function rowOf(d: Extract<TodoEvent, { type: 'TodoCreated' }>['data']): Insertable<TodosTable> {
  const at = new Date(d.created_at);
  const payload = jsonbSafe(d.payload);
  return {
    id: d.todo_id,
    endpoint_id: d.endpoint_id,
    slug: d.slug,
    operator: d.operator,
    queue: d.queue,
    kind: d.kind,
    title: textSafe(d.title),
    payload: payload.jsonb,
    payload_json: payload.bytes,
    key: textSafe(d.key),
    state: 'pending',
    source: d.source,
    event_id: d.event_id,
    created_by: d.created_by,
    created_at: at,
    updated_at: at,
    claimed_by: null,
  };
}

/** What a todo's later event sets on its row: the drain moves (state, lease holder and expiry, end), a move to another queue. */
function changeOf(
  event: DrainEvent | Extract<TodoEvent, { type: 'TodoMoved' }>,
): [string, Updateable<TodosTable>] {
  const change = (id: string, at: string, set: Updateable<TodosTable>): [string, Updateable<TodosTable>] => [
    id,
    { ...set, updated_at: new Date(at) },
  ];
  switch (event.type) {
    case 'TodoMoved':
      return change(event.data.todo_id, event.data.moved_at, { queue: event.data.to_queue });
    case 'TodoClaimed': {
      const d = event.data;
      return change(d.todo_id, d.claimed_at, {
        state: 'claimed',
        claimed_by: d.lease_id,
        holder_session: d.session_id,
        lease_expires_at: new Date(d.lease_expires_at),
      });
    }
    case 'TodoLeaseExtended':
      return change(event.data.todo_id, event.data.extended_at, {
        lease_expires_at: new Date(event.data.lease_expires_at),
      });
    case 'TodoReleased':
      return change(event.data.todo_id, event.data.released_at, {
        state: 'pending',
        claimed_by: null,
        holder_session: null,
        lease_expires_at: null,
      });
    case 'TodoLeaseExpired':
      return change(event.data.todo_id, event.data.expired_at, {
        state: 'pending',
        claimed_by: null,
        holder_session: null,
        lease_expires_at: null,
      });
    case 'TodoCompleted':
      return change(event.data.todo_id, event.data.completed_at, {
        state: 'completed',
        claimed_by: null,
        holder_session: null,
        lease_expires_at: null,
        ended_at: new Date(event.data.completed_at),
      });
    case 'TodoFailed': {
      const d = event.data;
      return change(d.todo_id, d.failed_at, {
        state: d.final ? 'failed' : 'pending',
        claimed_by: null,
        holder_session: null,
        lease_expires_at: null,
        ended_at: d.final ? new Date(d.failed_at) : null,
        attempts: d.attempt,
        last_error: textSafe(d.reason),
      });
    }
    default: {
      const never: never = event;
      return never;
    }
  }
}
