import type { FastifyInstance } from 'fastify';
import { listEndpoints } from '../../../projections/endpoints.queries.ts';
import { pageWebhookEvents } from '../../../projections/log.queries.ts';
import { findWebhook, listOperatorWebhooks } from '../../../projections/webhooks.queries.ts';
import { HooklineError } from '../../errors.ts';
import { humanResolver, layoutContext, sendHtml, type UiDeps, wantsFragment } from './context.ts';

const WEBHOOK_ID = /^wh_[a-z2-7]{20}$/;
const FAULTED_SHOWN = 20;
const RECENT_SHOWN = 50;

/**
 * GET /webhooks (the human's endpoint webhooks) and GET /webhooks/{id} (one: its signing scheme,
 * its rules, read-only since they are edited by the owning endpoint over MCP, its routes, and its
 * recent deliveries with what became of each, faulted first).
 */
export function registerWebhooksPages(app: FastifyInstance, deps: UiDeps): void {
  const humanOf = humanResolver(deps.config);

  app.get('/webhooks', async (request, reply) => {
    const human = humanOf(request);
    const [webhooks, endpoints] = await Promise.all([
      listOperatorWebhooks(deps.db, human),
      listEndpoints(deps.db, human),
    ]);
    const slugs = new Map(endpoints.map((e) => [e.id, e.slug]));
    return sendHtml(
      reply,
      deps.views.render('pages/webhooks.njk', {
        ...layoutContext(deps, 'webhooks'),
        webhooks: webhooks.map((w) => ({ ...w, slug: slugs.get(w.endpoint_id) ?? null })),
      }),
    );
  });

  app.get<{ Params: { id: string } }>('/webhooks/:id', async (request, reply) => {
    const { id } = request.params;
    const webhook = WEBHOOK_ID.test(id) ? await findWebhook(deps.db, id) : undefined;
    const human = humanOf(request);
    if (!webhook || webhook.operator !== human) {
      throw new HooklineError('not_found', 'no webhook of yours has that id');
    }
    const providers = [`webhook:${id}`];
    const [faulted, recent, endpoints] = await Promise.all([
      pageWebhookEvents(deps.db, { providers, disposition: 'faulted', limit: FAULTED_SHOWN }),
      pageWebhookEvents(deps.db, { providers, limit: RECENT_SHOWN }),
      listEndpoints(deps.db, human),
    ]);
    const view = {
      webhook,
      slug: endpoints.find((e) => e.id === webhook.endpoint_id)?.slug ?? null,
      deliveries: [...faulted, ...recent.filter((r) => r.disposition !== 'faulted')],
      faultedCount: faulted.length,
    };
    reply.header('vary', 'HX-Request, HX-History-Restore-Request');
    if (wantsFragment(request))
      return sendHtml(reply, deps.views.render('fragments/webhook-deliveries.njk', view));
    return sendHtml(
      reply,
      deps.views.render('pages/webhook.njk', { ...layoutContext(deps, 'webhooks'), ...view }),
    );
  });
}
