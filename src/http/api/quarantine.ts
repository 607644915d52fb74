import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { listQuarantine } from '../../../projections/quarantine.queries.ts';
import type { QuarantineRow } from '../../../projections/quarantine.table.ts';
import type { OperatorAuth } from '../../auth/index.ts';
import { queueNameSchema } from '../../domain/queue.ts';
import { releaseHeld } from '../../rules/quarantine-release.ts';
import type { Runtime } from '../../runtime.ts';
import { READ_YOUR_WRITES_MS } from '../logged-delivery.ts';
import { operatorBearer } from './operator-bearer.ts';
import { answer, fieldProblem, operatorRoute, problem, refusedAs, withZodSchemas } from './route-schema.ts';
import { QuarantinePage, ReleaseOut } from './schemas.ts';

export interface QuarantineApiDeps {
  readonly runtime: Pick<Runtime, 'store' | 'clock' | 'db' | 'projections' | 'logger'>;
  readonly auth: Pick<OperatorAuth, 'verifyBearer'>;
}

const LIMIT_ERROR = 'expected a whole number from 1 to 200';
const ListQuery = refusedAs(
  z.object({
    state: z
      .enum(['held', 'released', 'all'], { error: 'expected one of held, released or all' })
      .default('held')
      .describe('Which holds: still `held` (default), `released`, or `all`.'),
    limit: z.coerce
      .number({ error: LIMIT_ERROR })
      .int({ error: LIMIT_ERROR })
      .min(1, { error: LIMIT_ERROR })
      .max(200, { error: LIMIT_ERROR })
      .default(50)
      .describe('1 to 200, default 50.'),
  }),
  fieldProblem('invalid_filter'),
);
const ReleaseIn = refusedAs(
  z.object({ queue: queueNameSchema.describe('A queue of the held delivery’s endpoint.') }),
  fieldProblem('invalid_body'),
);
const TodoParams = refusedAs(
  z.object({
    todo_id: z
      .string()
      .regex(/^td_[a-z2-7]{20}$/, 'a todo id looks like td_ followed by 20 base32 characters')
      .describe('The held todo (`td_…`).'),
  }),
  fieldProblem('invalid_body'),
);

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

/**
 * The operator's view of quarantine (docs/guides/writing-rules.md, "Quarantine"): `GET /api/v1/quarantine` lists held
 * deliveries of the operator's endpoints with why they were held; `POST
 * /api/v1/quarantine/{todo_id}/release` with `{ "queue": "..." }` hands one to a queue of its
 * endpoint as a new todo (once the rules are fixed). Same operator bearer as the rest of /api/v1.
 */
export function createQuarantineRoutes(deps: QuarantineApiDeps) {
  const { runtime, auth } = deps;
  const { principal, verify } = operatorBearer(auth);

  const routes = async (scope: FastifyInstance) => {
    const api = withZodSchemas(scope);
    api.addHook('onRequest', verify);

    api.get(
      '/quarantine',
      {
        schema: operatorRoute({
          operationId: 'listQuarantine',
          summary: 'Held deliveries of the operator’s endpoints, with why they were held',
          tags: ['quarantine'],
          querystring: ListQuery,
          response: {
            200: answer('Holds', QuarantinePage),
            400: problem('`state` or `limit` is invalid (`invalid_filter`, naming the field).'),
          },
        }),
      },
      async (request) => {
        const { query } = request;
        const rows = await listQuarantine(runtime.db, principal(request).operator, { limit: 1000 });
        const held = rows
          .filter((r) => query.state === 'all' || (query.state === 'held') === (r.released_at === null))
          .slice(0, query.limit);
        return { held: held.map(holdOut) };
      },
    );

    api.post(
      '/quarantine/:todo_id/release',
      {
        schema: operatorRoute({
          operationId: 'releaseHeld',
          summary: 'Hand a held delivery to a queue of its endpoint as a new todo',
          tags: ['quarantine'],
          params: TodoParams,
          body: ReleaseIn,
          response: {
            201: answer('Released', ReleaseOut),
            400: problem(
              'A malformed todo id or queue, `quarantine` itself, or a queue the endpoint does not drain.',
            ),
            404: problem('No held delivery of the operator has that todo id.'),
            409: problem(
              'Released already to another queue (again to the same queue answers the same todo), or the endpoint is no longer active.',
            ),
          },
        }),
      },
      async (request, reply) => {
        const p = principal(request);
        const heldTodoId = request.params.todo_id;
        const { body } = request;
        const { release, position } = await releaseHeld(
          { store: runtime.store, clock: runtime.clock },
          { heldTodoId, queue: body.queue, operator: p.operator, human: p.human },
        );
        if (position) {
          await runtime.projections
            .waitFor(position, { timeoutMs: READ_YOUR_WRITES_MS })
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
      },
    );
  };

  return fp(
    async (app) => {
      await app.register(routes, { prefix: '/api/v1' });
    },
    { name: 'hookline-quarantine-api', dependencies: ['hookline-errors'] },
  );
}
