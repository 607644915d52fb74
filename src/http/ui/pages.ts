import type { FastifyInstance } from 'fastify';
import { listEvents } from '../../../projections/log.queries.ts';
import type { ProviderListing } from '../../../projections/providers.queries.ts';
import { loadStatusSnapshot } from '../../live/status.ts';
import { layoutContext, sendHtml, type UiDeps } from './context.ts';
import { readAtLogPosition } from './snapshot.ts';
import type { Views } from './views.ts';

/** The toggle of one provider (spec 4.8): rendered here and by POST /providers/{name}/enabled. */
export const renderProviderToggle = (
  views: Views,
  provider: Pick<ProviderListing, 'name' | 'enabled'>,
): string => views.render('fragments/provider-toggle.njk', { provider });

/** JSON only when asked for it and not for HTML: a browser's Accept lists text/html. */
const wantsJson = (accept: string | undefined): boolean =>
  Boolean(accept?.includes('application/json')) && !accept?.includes('text/html');

/** GET / (spec 4.3) and GET /providers (spec 4.7; JSON with Accept: application/json). */
export function registerPages(app: FastifyInstance, deps: UiDeps): void {
  app.get('/', async (_request, reply) => {
    const connection = deps.hub.connection();
    // Counters and rows from one snapshot at a log position: the page's stream resumes from it.
    let listing: readonly ProviderListing[] = [];
    const { value, position } = await readAtLogPosition(deps.db, (trx) =>
      Promise.all([
        loadStatusSnapshot(
          { clock: deps.clock, listProviders: async () => (listing = await deps.listProviders(trx)) },
          connection,
        ),
        listEvents(trx, {}, undefined, 8),
      ]),
    );
    // A signed provider without its secret answers 404: its card says so, and what configures it.
    const unconfigured = Object.fromEntries(
      listing.filter((p) => !p.configured).map((p) => [p.name, p.configure_with]),
    );
    const [status, latest] = value;
    const totalRecent = status.providers.reduce((n, p) => n + p.recent_count, 0);
    const newest = status.providers
      .map((p) => p.last_event_at)
      .filter((t): t is string => t !== null)
      .sort()
      .at(-1);
    return sendHtml(
      reply,
      deps.views.render('pages/dashboard.njk', {
        ...layoutContext(deps, 'dashboard', position),
        status,
        unconfigured,
        totalRecent,
        newest: newest ?? null,
        latest: latest.events,
        activityWindowS: Math.round(deps.hub.activityWindowMs / 1000),
      }),
    );
  });

  app.get('/providers', async (request, reply) => {
    const providers = await deps.listProviders();
    if (wantsJson(request.headers.accept)) {
      // ProviderStatus of spec 2.4, for the CLI (`hookline providers list`) and scripts.
      return reply.type('application/json; charset=utf-8').send(
        providers.map((p) => ({
          name: p.name,
          kind: p.kind,
          family: p.family,
          trust_mode: p.trust_mode,
          enabled: p.enabled,
          secret_status: p.secret_status,
          configured: p.configured,
          configure_with: p.configure_with,
          path: p.path,
          channel: p.channel,
          recent_count: p.recent_count,
          last_event_at: p.last_event_at,
        })),
      );
    }
    return sendHtml(
      reply,
      deps.views.render('pages/providers.njk', { ...layoutContext(deps, 'providers'), providers }),
    );
  });
}
