import type { FastifyInstance } from 'fastify';
import { listEvents } from '../../../projections/log.ts';
import type { ProviderListing } from '../../../projections/providers.ts';
import { layoutContext, sendHtml, type UiDeps } from './context.ts';
import type { Views } from './views.ts';

/** The toggle of one provider (spec 4.8): rendered here and by POST /providers/{name}/enabled. */
export const renderProviderToggle = (
  views: Views,
  provider: Pick<ProviderListing, 'name' | 'enabled'>,
): string => views.render('fragments/provider-toggle.njk', { provider });

/** GET / (spec 4.3) and GET /providers (spec 4.7). */
export function registerPages(app: FastifyInstance, deps: UiDeps): void {
  app.get('/', async (_request, reply) => {
    const connection = deps.hub.connection();
    const [status, latest] = await Promise.all([
      deps.loadStatus(connection),
      listEvents(deps.db, {}, undefined, 8),
    ]);
    const totalRecent = status.providers.reduce((n, p) => n + p.recent_count, 0);
    const newest = status.providers
      .map((p) => p.last_event_at)
      .filter((t): t is string => t !== null)
      .sort()
      .at(-1);
    return sendHtml(
      reply,
      deps.views.render('pages/dashboard.njk', {
        ...layoutContext(deps, 'dashboard'),
        status,
        totalRecent,
        newest: newest ?? null,
        latest: latest.events,
        activityWindowS: Math.round(deps.hub.activityWindowMs / 1000),
      }),
    );
  });

  app.get('/providers', async (_request, reply) => {
    const providers = await deps.listProviders();
    return sendHtml(
      reply,
      deps.views.render('pages/providers.njk', { ...layoutContext(deps, 'providers'), providers }),
    );
  });
}
