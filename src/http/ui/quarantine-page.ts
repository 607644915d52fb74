import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { endpointScopes } from '../../../projections/endpoints.queries.ts';
import { findHeld, listQuarantine } from '../../../projections/quarantine.queries.ts';
import type { QuarantineRow } from '../../../projections/quarantine.table.ts';
import { todoTitles } from '../../../projections/todos.queries.ts';
import { webhookNames } from '../../../projections/webhooks.queries.ts';
import { createIdentityResolver } from '../../auth/identity.ts';
import { QUARANTINE, queueNameSchema } from '../../domain/queue.ts';
import { HooklineError } from '../../errors.ts';
import { releaseHeld } from '../../rules/quarantine-release.ts';
import { summarizeZod } from '../errors-plugin.ts';
import { layoutContext, sendHtml, type UiDeps, wantsFragment } from './context.ts';

const TodoParam = z.string().regex(/^td_[a-z2-7]{20}$/);

/** One row of the quarantine table, with what the screen names beside the read model's ids. */
export interface HeldView {
  readonly todo_id: string;
  readonly event_id: number;
  readonly title: string | null;
  readonly webhook_id: string;
  readonly webhook_name: string | null;
  readonly slug: string | null;
  readonly disposition: string;
  readonly reason: string | null;
  readonly message: string | null;
  readonly rule: string | null;
  readonly held_at: Date;
  readonly released: null | { queue: string | null; todo_id: string | null; by: string | null; at: Date };
  /** The queues a release may hand it to: the endpoint's, never `quarantine`. */
  readonly queues: readonly string[];
}

async function views(deps: UiDeps, rows: readonly QuarantineRow[]): Promise<HeldView[]> {
  if (rows.length === 0) return [];
  const ids = (key: 'todo_id' | 'endpoint_id' | 'webhook_id') => [...new Set(rows.map((r) => r[key]))];
  const [title, endpoint, webhook] = await Promise.all([
    todoTitles(deps.db, ids('todo_id')),
    endpointScopes(deps.db, ids('endpoint_id')),
    webhookNames(deps.db, ids('webhook_id')),
  ]);
  return rows.map((r) => {
    const ep = endpoint.get(r.endpoint_id);
    return {
      todo_id: r.todo_id,
      event_id: Number(r.event_id),
      title: title.get(r.todo_id) ?? null,
      webhook_id: r.webhook_id,
      webhook_name: webhook.get(r.webhook_id) ?? null,
      slug: ep?.slug ?? null,
      disposition: r.disposition,
      reason: r.reason,
      message: r.message,
      rule: r.rule_id === null ? null : `${r.rule_id} (#${r.rule_index})`,
      held_at: new Date(r.held_at),
      released:
        r.released_at === null
          ? null
          : {
              queue: r.released_queue,
              todo_id: r.released_todo_id,
              by: r.released_by,
              at: new Date(r.released_at),
            },
      queues: (ep?.queues ?? []).filter((q) => q !== QUARANTINE),
    };
  });
}

/**
 * GET /quarantine and POST /quarantine/{todo_id}/release (docs/guides/writing-rules.md, "Quarantine"): the operator's
 * held deliveries with why they were held, and a release to one of the endpoint's queues through
 * the same domain handler as POST /api/v1/quarantine/{todo_id}/release. The screens have no
 * in-app sign-in (spec 1.7): the operator is the forward-auth user when a trusted proxy names one,
 * else HOOKLINE_OPERATOR, resolved as the sign-in page does.
 */
export function registerQuarantinePage(app: FastifyInstance, deps: UiDeps): void {
  const identify = createIdentityResolver(deps.config);
  const operatorOf = (request: FastifyRequest): string => {
    const who = identify(request.raw);
    return who.ok ? who.human : deps.config.operator;
  };

  app.get('/quarantine', async (request, reply) => {
    const held = await views(deps, await listQuarantine(deps.db, operatorOf(request), { limit: 200 }));
    return sendHtml(
      reply,
      deps.views.render('pages/quarantine.njk', { ...layoutContext(deps, 'quarantine'), held }),
    );
  });

  app.post<{ Params: { todo_id: string } }>('/quarantine/:todo_id/release', async (request, reply) => {
    const todoId = TodoParam.safeParse(request.params.todo_id);
    if (!todoId.success) throw new HooklineError('not_found', 'no held delivery of yours has that todo id');
    const body = (request.body ?? {}) as Record<string, unknown>;
    const queue = queueNameSchema.safeParse(body.queue);
    if (!queue.success) {
      throw new HooklineError('invalid_body', summarizeZod(queue.error), { field: 'queue' });
    }
    const operator = operatorOf(request);
    const { position } = await releaseHeld(
      { store: deps.store, clock: deps.clock },
      { heldTodoId: todoId.data, queue: queue.data, operator, human: operator },
    );
    if (position) {
      // Read your write; the release itself is recorded either way.
      await deps.projections.waitFor(position, { timeoutMs: deps.readYourWritesMs ?? 2000 }).catch(() => {});
    }
    if (!wantsFragment(request)) return reply.redirect('/quarantine', 303);
    const row = await findHeld(deps.db, operator, todoId.data);
    const [h] = await views(deps, row);
    return sendHtml(reply, deps.views.render('fragments/quarantine-row.njk', { h }));
  });
}
