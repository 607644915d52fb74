import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { tableExists } from './engine/tables.ts';
import { jsonFromStored } from './pg-safe.ts';
import type { TodoRow } from './todos.table.ts';

/** A row with its payload as stored: from payload_json when jsonb could not hold it (a NUL). */
function withPayload(row: TodoRow): TodoRow {
  return row.payload_json ? { ...row, payload: jsonFromStored(row.payload, row.payload_json) } : row;
}

/** What the drain verbs, the lease expiry and the screens read. */
export async function findTodo(db: Kysely<Database>, id: string): Promise<TodoRow | undefined> {
  const row = await db.selectFrom('todos').selectAll().where('id', '=', id).executeTakeFirst();
  return row && withPayload(row);
}

/** An endpoint's todos on one queue, oldest first (what list_todos shows). */
export async function listTodos(
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
  const rows = await q
    .orderBy('created_at')
    .orderBy('id')
    .limit(filter.limit ?? 100)
    .execute();
  return rows.map(withPayload);
}

export interface Candidate {
  readonly id: string;
  readonly createdAt: Date;
}

interface CandidateFilter {
  readonly endpointId: string;
  /** Not empty. */
  readonly queues: readonly string[];
  readonly after?: Candidate | undefined;
  readonly limit: number;
}

/**
 * The one query of claim_next's candidates: pending todos of an endpoint's queues, oldest first,
 * strictly after a (created_at, id) cursor. Each queue's page is the first rows of its part of
 * todos_pending_order_idx (no sort of the backlog); several queues are merged from one such page
 * each (a lateral page a queue, then the oldest of them), since an index scan over `queue in (…)`
 * reads every pending todo of those queues before it can order them.
 */
function candidatesQuery(db: Kysely<Database>, filter: CandidateFilter) {
  const after = filter.after;
  const pending = (qb: SelectQueryBuilder<Database, 'todos', object>) => {
    let q = qb
      .select(['todos.id', 'todos.created_at'])
      .where('todos.endpoint_id', '=', filter.endpointId)
      .where('todos.state', '=', 'pending');
    if (after) {
      q = q.where((eb) =>
        eb(eb.refTuple('todos.created_at', 'todos.id'), '>', eb.tuple(after.createdAt, after.id)),
      );
    }
    return q.orderBy('todos.created_at').orderBy('todos.id').limit(filter.limit);
  };
  if (filter.queues.length === 1)
    return pending(db.selectFrom('todos').where('todos.queue', '=', filter.queues[0]!));
  return db
    .selectFrom(sql<{ q: string }>`unnest(${[...filter.queues]}::text[])`.as('q'))
    .innerJoinLateral(
      (eb) => pending(eb.selectFrom('todos').whereRef('todos.queue', '=', 'q.q')).as('c'),
      (join) => join.onTrue(),
    )
    .select(['c.id', 'c.created_at'])
    .orderBy('c.created_at')
    .orderBy('c.id')
    .limit(filter.limit);
}

/**
 * Pending todos of an endpoint's queues, oldest first, strictly after a (created_at, id) cursor:
 * claim_next's candidates. The read model may lag; the claim itself checks the todo's stream.
 */
export async function pendingCandidates(db: Kysely<Database>, filter: CandidateFilter): Promise<Candidate[]> {
  if (filter.queues.length === 0) return [];
  const rows = await candidatesQuery(db, filter).execute();
  return rows.map((r) => ({ id: r.id, createdAt: new Date(r.created_at) }));
}

/**
 * claim_next's first page of candidates (as pendingCandidates from the start) and, in the same
 * statement, the current revision of one event stream (-1 when it does not exist): the MCP bearer
 * check of the endpoint that claims, so that the call's first read is also its check (issue 23).
 */
export async function pendingCandidatesWithRevision(
  db: Kysely<Database>,
  filter: { readonly endpointId: string; readonly queues: readonly string[]; readonly limit: number },
  streamId: string,
): Promise<{ readonly revision: bigint; readonly candidates: Candidate[] }> {
  const revisionOf = sql<
    string | null
  >`(select revision::text from es_streams where stream_id = ${streamId})`;
  if (filter.queues.length === 0) {
    const { rows } = await sql<{ revision: string | null }>`select ${revisionOf} as revision`.execute(db);
    return { revision: BigInt(rows[0]?.revision ?? -1), candidates: [] };
  }
  const { rows } = await sql<{
    revision: string | null;
    id: string | null;
    created_at: Date | string | null;
  }>`
    select s.revision, c.id, c.created_at
    from (select ${revisionOf} as revision) s
    left join lateral ${candidatesQuery(db, filter)} c on true
    order by c.created_at, c.id`.execute(db);
  return {
    revision: BigInt(rows[0]?.revision ?? -1),
    candidates: rows.flatMap((r) =>
      r.id === null || r.created_at === null ? [] : [{ id: r.id, createdAt: new Date(r.created_at) }],
    ),
  };
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

/** One page of an endpoint's todos on `queues`, oldest first, after a (created_at, id) cursor (list_todos). */
export async function pageTodos(
  db: Kysely<Database>,
  filter: {
    readonly endpointId: string;
    readonly queues: readonly string[];
    readonly state?: string | undefined;
    readonly kind?: string | undefined;
    readonly after?: { readonly at: Date; readonly id: string } | undefined;
    readonly limit: number;
  },
) {
  if (filter.queues.length === 0) return [];
  let q = db
    .selectFrom('todos')
    .select([
      'id',
      'queue',
      'kind',
      'state',
      'title',
      'created_at',
      'updated_at',
      'lease_expires_at',
      'event_id',
    ])
    .where('endpoint_id', '=', filter.endpointId)
    .where('queue', 'in', [...filter.queues]);
  if (filter.state) q = q.where('state', '=', filter.state);
  if (filter.kind) q = q.where('kind', '=', filter.kind);
  const after = filter.after;
  if (after) q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(after.at, after.id)));
  return q.orderBy('created_at').orderBy('id').limit(filter.limit).execute();
}

/** A queue's live todos at a glance (the MCP queue resource): how many pending and claimed, the oldest pending. */
export async function queueCounts(
  db: Kysely<Database>,
  endpointId: string,
  queue: string,
): Promise<{ readonly pending: number; readonly claimed: number; readonly oldestPendingAt: Date | null }> {
  const rows = await db
    .selectFrom('todos')
    .select(['state'])
    .select((eb) => [eb.fn.countAll<string>().as('n'), eb.fn.min('created_at').as('oldest')])
    .where('endpoint_id', '=', endpointId)
    .where('queue', '=', queue)
    .where('state', 'in', ['pending', 'claimed'])
    .groupBy('state')
    .execute();
  const pending = rows.find((r) => r.state === 'pending');
  const claimed = rows.find((r) => r.state === 'claimed');
  return {
    pending: Number(pending?.n ?? 0),
    claimed: Number(claimed?.n ?? 0),
    oldestPendingAt: pending?.oldest ? new Date(pending.oldest as Date) : null,
  };
}

/** Todos on `queue` that quarantine did not put there (the reserved-queue check at start); [] before the table exists. */
export async function todosUsingQueue(db: Kysely<Database>, queue: string): Promise<string[]> {
  if (!(await tableExists(db, 'todos'))) return [];
  let q = db.selectFrom('todos').select('id').where('queue', '=', queue).where('kind', '<>', 'webhook');
  if (await tableExists(db, 'quarantine')) {
    q = q.where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('quarantine').select('todo_id').whereRef('quarantine.todo_id', '=', 'todos.id'))),
    );
  }
  const rows = await q.orderBy('id').execute();
  return rows.map((r) => r.id);
}

/** Titles of todos by id (the quarantine screen names what it holds). */
export async function todoTitles(db: Kysely<Database>, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('todos')
    .select(['id', 'title'])
    .where('id', 'in', [...ids])
    .execute();
  return new Map(rows.map((r) => [r.id, r.title]));
}

/** The live (pending or claimed) todos of an endpoint on `queues`: what removing a queue would strand. */
export async function liveTodosOn(
  db: Kysely<Database>,
  endpointId: string,
  queues: readonly string[],
): Promise<{ readonly id: string; readonly queue: string }[]> {
  if (queues.length === 0) return [];
  return db
    .selectFrom('todos')
    .select(['id', 'queue'])
    .where('endpoint_id', '=', endpointId)
    .where('queue', 'in', [...queues])
    .where('state', 'in', ['pending', 'claimed'])
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** How many todos each of an operator's queues holds, by state (the console's agents screen). */
export async function operatorQueueCounts(
  db: Kysely<Database>,
  operator: string,
): Promise<
  { readonly endpoint_id: string; readonly queue: string; readonly state: string; readonly n: number }[]
> {
  const rows = await db
    .selectFrom('todos')
    .select(['endpoint_id', 'queue', 'state'])
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('operator', '=', operator)
    .groupBy(['endpoint_id', 'queue', 'state'])
    .execute();
  return rows.map((r) => ({ endpoint_id: r.endpoint_id, queue: r.queue, state: r.state, n: Number(r.n) }));
}

/**
 * One page of an operator's todos, newest first, before a (created_at, id) cursor: the console's
 * todo list, optionally one endpoint's queue and one state.
 */
export function pageOperatorTodos(
  db: Kysely<Database>,
  filter: {
    readonly operator: string;
    readonly endpointId?: string | undefined;
    readonly queue?: string | undefined;
    readonly state?: string | undefined;
    readonly before?: { readonly at: Date; readonly id: string } | undefined;
    readonly limit: number;
  },
) {
  let q = db
    .selectFrom('todos')
    .select([
      'id',
      'slug',
      'queue',
      'kind',
      'state',
      'title',
      'created_at',
      'updated_at',
      'lease_expires_at',
      'holder_session',
      'attempts',
      'last_error',
      'event_id',
    ])
    .where('operator', '=', filter.operator);
  if (filter.endpointId) q = q.where('endpoint_id', '=', filter.endpointId);
  if (filter.queue) q = q.where('queue', '=', filter.queue);
  if (filter.state) q = q.where('state', '=', filter.state);
  const before = filter.before;
  if (before) q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(before.at, before.id)));
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}

/**
 * Todos counted by endpoint (its slug), queue and state (GET /metrics), of the endpoints still in
 * service at `now` (active, not past their expiry): a revoked or expired endpoint's todos can no
 * longer move, and leaving them out keeps the number of series to the endpoints in service, their
 * queues and the four states. Only non-zero counts are returned.
 */
export function countTodosByEndpointQueueAndState(
  db: Kysely<Database>,
  now: Date,
): Promise<{ slug: string; queue: string; state: string; count: number }[]> {
  return db
    .selectFrom('todos')
    .innerJoin('endpoints', 'endpoints.id', 'todos.endpoint_id')
    .where('endpoints.state', '=', 'active')
    .where((eb) => eb.or([eb('endpoints.expires_at', 'is', null), eb('endpoints.expires_at', '>', now)]))
    .select(['endpoints.slug', 'todos.queue', 'todos.state'])
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .groupBy(['endpoints.slug', 'todos.queue', 'todos.state'])
    .execute()
    .then((rows) =>
      rows.map((r) => ({ slug: r.slug, queue: r.queue, state: r.state, count: Number(r.count) })),
    );
}
