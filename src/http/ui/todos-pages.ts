import type { FastifyInstance, FastifyRequest } from 'fastify';
import { findEndpointBySlug, listEndpoints } from '../../../projections/endpoints.queries.ts';
import { findTodo, pageOperatorTodos } from '../../../projections/todos.queries.ts';
import type { TodoEvent } from '../../domain/todo/events.ts';
import { HooklineError } from '../../errors.ts';
import { readTodoHistory } from '../../todos/history.ts';
import { queueUrl, TODO_STATES } from './agents-page.ts';
import { humanResolver, layoutContext, sendHtml, type UiDeps, wantsFragment } from './context.ts';

const PAGE = 50;
const QUEUE = /^([a-z0-9-]{1,80})\/([a-z0-9][a-z0-9_-]{0,63})$/;
const CURSOR = /^([0-9]{1,15})\.(td_[a-z2-7]{20})$/;
const TODO_ID = /^td_[a-z2-7]{20}$/;

interface TodoFilters {
  readonly queue?: string;
  readonly state?: string;
  readonly cursor?: string;
}

/** Each filter at most once and well formed; anything else is a 400 naming it. */
function readFilters(request: FastifyRequest): TodoFilters {
  const q = (request.query ?? {}) as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const name of ['queue', 'state', 'cursor'] as const) {
    const v = q[name];
    if (v === undefined) continue;
    if (typeof v !== 'string')
      throw new HooklineError('invalid_filter', `${name} may be given once`, { field: name });
    if (v.trim() !== '') out[name] = v.trim();
  }
  if (out.queue !== undefined && !QUEUE.test(out.queue)) {
    throw new HooklineError('invalid_filter', 'queue is <endpoint slug>/<queue name>', { field: 'queue' });
  }
  if (out.state !== undefined && !(TODO_STATES as readonly string[]).includes(out.state)) {
    throw new HooklineError('invalid_filter', `state is one of ${TODO_STATES.join(', ')}`, {
      field: 'state',
    });
  }
  if (out.cursor !== undefined && !CURSOR.test(out.cursor)) {
    throw new HooklineError('invalid_filter', 'the cursor is not one this page gave', { field: 'cursor' });
  }
  return out;
}

const listUrl = (f: TodoFilters): string => {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v) s.set(k, v);
  const text = s.toString();
  return text ? `/todos?${text}` : '/todos';
};

/** One event of a todo's stream as its history shows it; every text is rendered escaped. */
export interface HistoryEntry {
  readonly type: string;
  readonly what: string;
  readonly at: string;
  readonly who: string | null;
  readonly detail: string | null;
}

function historyEntry(e: TodoEvent, slug: string): HistoryEntry {
  const agent = (session: string | null) => (session ? `${slug} (session ${session})` : slug);
  switch (e.type) {
    case 'TodoCreated':
      return {
        type: e.type,
        what: `Pushed to ${e.data.queue}`,
        at: e.data.created_at,
        who: e.data.created_by,
        detail: `source ${e.data.source}${e.data.key ? `, key ${e.data.key}` : ''}`,
      };
    case 'TodoClaimed':
      return {
        type: e.type,
        what: 'Claimed',
        at: e.data.claimed_at,
        who: agent(e.data.session_id),
        detail: `lease until ${e.data.lease_expires_at}`,
      };
    case 'TodoLeaseExtended':
      return {
        type: e.type,
        what: 'Lease extended',
        at: e.data.extended_at,
        who: slug,
        detail: `until ${e.data.lease_expires_at}`,
      };
    case 'TodoReleased':
      return { type: e.type, what: 'Released', at: e.data.released_at, who: slug, detail: e.data.reason };
    case 'TodoLeaseExpired':
      return {
        type: e.type,
        what: 'Lease expired',
        at: e.data.expired_at,
        who: null,
        detail: `the lease ran until ${e.data.lease_expires_at}`,
      };
    case 'TodoCompleted':
      return {
        type: e.type,
        what: 'Completed',
        at: e.data.completed_at,
        who: slug,
        detail: e.data.result === undefined ? null : JSON.stringify(e.data.result),
      };
    case 'TodoFailed':
      return {
        type: e.type,
        what: e.data.final ? 'Failed for good' : 'Failed, to be retried',
        at: e.data.failed_at,
        who: slug,
        detail: `attempt ${e.data.attempt} of ${e.data.max_attempts}: ${e.data.reason}`,
      };
    case 'TodoMoved':
      return {
        type: e.type,
        what: 'Moved',
        at: e.data.moved_at,
        who: e.data.moved_by,
        detail: `from queue ${e.data.from_queue} to ${e.data.to_queue}`,
      };
    default: {
      const never: never = e;
      return never;
    }
  }
}

/** GET /todos (the human's todos, by queue and state) and GET /todos/{id} (one, with its history). */
export function registerTodosPages(app: FastifyInstance, deps: UiDeps): void {
  const humanOf = humanResolver(deps.config);

  app.get('/todos', async (request, reply) => {
    const human = humanOf(request);
    const filters = readFilters(request);
    const [slug, queue] = filters.queue ? (QUEUE.exec(filters.queue)?.slice(1) ?? []) : [];
    let endpointId: string | undefined;
    if (slug) {
      const endpoint = await findEndpointBySlug(deps.db, slug);
      if (!endpoint || endpoint.operator !== human) {
        throw new HooklineError('not_found', 'no endpoint of yours has that slug', { field: 'queue' });
      }
      endpointId = endpoint.id;
    }
    const cursor = filters.cursor ? CURSOR.exec(filters.cursor) : null;
    const rows = await pageOperatorTodos(deps.db, {
      operator: human,
      endpointId,
      queue,
      state: filters.state,
      before: cursor ? { at: new Date(Number(cursor[1])), id: cursor[2]! } : undefined,
      limit: PAGE + 1,
    });
    const todos = rows.slice(0, PAGE);
    const last = todos.at(-1);
    const keep = { queue: filters.queue, state: filters.state };
    const view = {
      todos,
      filters: keep,
      paged: filters.cursor !== undefined,
      selfUrl: listUrl(keep),
      olderUrl:
        rows.length > PAGE && last
          ? listUrl({ ...keep, cursor: `${new Date(last.created_at).getTime()}.${last.id}` })
          : null,
      filtered: Boolean(filters.queue || filters.state),
      now: deps.clock.now(),
    };
    reply.header('vary', 'HX-Request, HX-History-Restore-Request');
    if (wantsFragment(request))
      return sendHtml(reply, deps.views.render('fragments/todos-results.njk', view));
    const endpoints = await listEndpoints(deps.db, human);
    const queues = endpoints.flatMap((e) => e.queues.map((q) => `${e.slug}/${q}`));
    if (filters.queue && !queues.includes(filters.queue)) queues.push(filters.queue);
    return sendHtml(
      reply,
      deps.views.render('pages/todos.njk', {
        ...layoutContext(deps, 'todos'),
        ...view,
        queues,
        states: TODO_STATES,
      }),
    );
  });

  app.get<{ Params: { id: string } }>('/todos/:id', async (request, reply) => {
    const { id } = request.params;
    const todo = TODO_ID.test(id) ? await findTodo(deps.db, id) : undefined;
    if (!todo || todo.operator !== humanOf(request)) {
      throw new HooklineError('not_found', 'no todo of yours has that id');
    }
    // The audit trail is the todo's own stream, read as recorded.
    const history: HistoryEntry[] = (await readTodoHistory(deps.store, id)).map((e) =>
      historyEntry(e, todo.slug),
    );
    const view = {
      todo,
      payload: JSON.stringify(todo.payload, null, 2) ?? 'null',
      history,
      queueUrl: queueUrl(todo.slug, todo.queue),
    };
    reply.header('vary', 'HX-Request, HX-History-Restore-Request');
    if (wantsFragment(request)) return sendHtml(reply, deps.views.render('fragments/todo-detail.njk', view));
    return sendHtml(reply, deps.views.render('pages/todo.njk', { ...layoutContext(deps, 'todos'), ...view }));
  });
}
