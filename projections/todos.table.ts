import type { ColumnType, Kysely, Selectable } from 'kysely';

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
  /** The payload as jsonb; null when it holds a NUL character (jsonb refuses one): see payload_json. */
  payload: ColumnType<unknown, string, string>;
  /** The payload's JSON text when it holds a NUL character, else null (projections/pg-safe.ts). */
  payload_json: ColumnType<Buffer | null, Buffer | null | undefined, Buffer | null>;
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
  /** The MCP session of the current claim, for the operator's eyes (the lease id stays secret). */
  holder_session: ColumnType<string | null, string | null | undefined, string | null>;
  /** Failed attempts so far, and the reason of the newest failure (the console's todo screens). */
  attempts: ColumnType<number, number | undefined, number>;
  last_error: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface TodoTables {
  todos: TodosTable;
}

export type TodoRow = Selectable<TodosTable>;

/** Creates the tables and their indexes (a rebuild creates them afresh in its shadow schema). */
export async function createTodoTables(db: Pick<Kysely<unknown>, 'schema'>): Promise<void> {
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
    .addColumn('payload_json', 'bytea')
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
    .addColumn('holder_session', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('last_error', 'text')
    .execute();
  // claim_next's candidates (todos.queries.ts): a queue's pending todos in (created_at, id) order,
  // so a page is the index's first rows, read without a sort of the whole backlog. Without `id`
  // the planner sorted every pending todo of the queue for each page: a claim cost grew with the
  // backlog (2.4 ms of PostgreSQL a claim at a few thousand pending, bench:agent, issue 23).
  await db.schema
    .createIndex('todos_pending_order_idx')
    .ifNotExists()
    .on('todos')
    .columns(['endpoint_id', 'queue', 'state', 'created_at', 'id'])
    .execute();
  // The lease-expiry job's look-up (src/todos/lease-expiry.ts).
  await db.schema
    .createIndex('todos_lease_idx')
    .ifNotExists()
    .on('todos')
    .columns(['state', 'lease_expires_at'])
    .execute();
  // The console's todo list: an operator's todos, newest first.
  await db.schema
    .createIndex('todos_operator_idx')
    .ifNotExists()
    .on('todos')
    .columns(['operator', 'created_at', 'id'])
    .execute();
}
