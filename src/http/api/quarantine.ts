import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { listQuarantine } from '../../../projections/quarantine.queries.ts';
import type { QuarantineRow } from '../../../projections/quarantine.table.ts';
import type { OperatorAuth, OperatorPrincipal } from '../../auth/index.ts';
import { queueNameSchema } from '../../domain/queue.ts';
import { HooklineError } from '../../errors.ts';
import { releaseHeld } from '../../rules/quarantine-release.ts';
import type { Runtime } from '../../runtime.ts';
import { summarizeZod } from '../errors-plugin.ts';

export interface QuarantineApiDeps {
  readonly runtime: Pick<Runtime, 'store' | 'clock' | 'db' | 'projections' | 'logger'>;
  readonly auth: Pick<OperatorAuth, 'verifyBearer'>;
}

const LIMIT_ERROR = 'expected a whole number from 1 to 200';
const ListQuery = z.object({
  state: z
    .enum(['held', 'released', 'all'], { error: 'expected one of held, released or all' })
    .default('held'),
  limit: z.coerce
    .number({ error: LIMIT_ERROR })
    .int({ error: LIMIT_ERROR })
    .min(1, { error: LIMIT_ERROR })
    .max(200, { error: LIMIT_ERROR })
    .default(50),
});
const ReleaseIn = z.object({ queue: queueNameSchema });
const TodoParam = z
  .string()
  .regex(/^td_[a-z2-7]{20}$/, 'a todo id looks like td_ followed by 20 base32 characters');

const holdOut = (r: QuarantineRow) => ({
  todo_id: r.todo_id,
  event_id: Number(r.event_id),
  webhook_id: r.webhook_id,
  endpoint_id: r.endpoint_id,
  disposition: r.disposition,
  reason: r.reason,
  message: r.message,
  rule: r.rule_id === null ? null : { id: r.rule_id, index: r.rule_index },
  rules_version: r.rules_version,
  held_at: new Date(r.held_at).toISOString(),
  released:
    r.released_at === null
      ? null
      : {
          queue: r.released_queue,
          todo_id: r.released_todo_id,
          by: r.released_by,
          at: new Date(r.released_at).toISOString(),
        },
});

/** `code`: invalid_filter for a query, invalid_body for a body or a path segment. */
function parse<T>(schema: z.ZodType<T>, value: unknown, code: 'invalid_body' | 'invalid_filter'): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path[0];
    throw new HooklineError(
      code,
      summarizeZod(parsed.error),
      field === undefined ? {} : { field: String(field) },
    );
  }
  return parsed.data;
}

/**
 * The operator's view of quarantine (docs/guides/writing-rules.md, "Quarantine"): `GET /api/v1/quarantine` lists held
 * deliveries of the operator's endpoints with why they were held; `POST
 * /api/v1/quarantine/{todo_id}/release` with `{ "queue": "..." }` hands one to a queue of its
 * endpoint as a new todo (once the rules are fixed). Same operator bearer as the rest of /api/v1.
 */
export function createQuarantineRoutes(deps: QuarantineApiDeps) {
  const { runtime, auth } = deps;
  const principals = new WeakMap<FastifyRequest, OperatorPrincipal>();
  const principal = (request: FastifyRequest): OperatorPrincipal => {
    const p = principals.get(request);
    if (!p) throw new HooklineError('unauthorized', 'an operator bearer token is required');
    return p;
  };

  const routes = async (api: FastifyInstance) => {
    api.addHook('onRequest', async (request, reply) => {
      try {
        principals.set(request, await auth.verifyBearer(request.headers.authorization));
      } catch (err) {
        reply.header(
          'www-authenticate',
          request.headers.authorization
            ? 'Bearer realm="hookline", error="invalid_token"'
            : 'Bearer realm="hookline"',
        );
        throw err;
      }
    });

    api.get('/quarantine', async (request) => {
      const query = parse(ListQuery, request.query, 'invalid_filter');
      const rows = await listQuarantine(runtime.db, principal(request).operator, { limit: 1000 });
      const held = rows
        .filter((r) => query.state === 'all' || (query.state === 'held') === (r.released_at === null))
        .slice(0, query.limit);
      return { held: held.map(holdOut) };
    });

    api.post<{ Params: { todo_id: string } }>('/quarantine/:todo_id/release', async (request, reply) => {
      const p = principal(request);
      const heldTodoId = parse(TodoParam, request.params.todo_id, 'invalid_body');
      const body = parse(ReleaseIn, request.body ?? undefined, 'invalid_body');
      const { release, position } = await releaseHeld(
        { store: runtime.store, clock: runtime.clock },
        { heldTodoId, queue: body.queue, operator: p.operator, human: p.human },
      );
      if (position) {
        await runtime.projections
          .waitFor(position, { timeoutMs: 5000 })
          .catch((err: unknown) =>
            runtime.logger.warn({ err }, 'read model lags behind a quarantine release'),
          );
      }
      return reply.code(201).send({
        held_todo_id: release.held_todo_id,
        todo_id: release.todo_id,
        queue: release.queue,
        event_id: release.event_id,
        released_at: release.released_at,
      });
    });
  };

  return fp(
    async (app) => {
      await app.register(routes, { prefix: '/api/v1' });
    },
    { name: 'hookline-quarantine-api', dependencies: ['hookline-errors'] },
  );
}
