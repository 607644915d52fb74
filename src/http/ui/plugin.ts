import querystring from 'node:querystring';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { refuseCrossSite } from '../same-origin.ts';
import { registerAgentsPage } from './agents-page.ts';
import { type Assets, registerAssetRoutes } from './assets.ts';
import { layoutContext, type UiDeps } from './context.ts';
import { registerLogPages } from './log-pages.ts';
import { registerPages } from './pages.ts';
import { registerQuarantinePage } from './quarantine-page.ts'; // RULES (issue 7)
import { securityHeaders } from './security.ts';
import { registerSettingsPage } from './settings-page.ts';
import { registerTodosPages } from './todos-pages.ts';
import { registerWebhooksPages } from './webhooks-pages.ts';

const FORM = 'application/x-www-form-urlencoded';
const FORM_LIMIT = 64 * 1024;

/** Form posts of the screens: a flat object, the last value of a repeated field winning. */
function registerFormParser(app: FastifyInstance): void {
  // This context is encapsulated: replacing an inherited parser here changes no other surface.
  if (app.hasContentTypeParser(FORM)) app.removeContentTypeParser(FORM);
  app.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: FORM_LIMIT }, (_request, body, done) => {
    const parsed = querystring.parse(body as string);
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(parsed)) out[k] = Array.isArray(v) ? (v.at(-1) ?? '') : (v ?? '');
    done(null, out);
  });
}

/**
 * The web UI (spec 4.3, 4.5 to 4.9): dashboard, log, detail, providers, settings and /static,
 * and the console of the human's own agents, todos and webhooks.
 * Its routes live in one encapsulated context that adds the security headers (CSP and friends)
 * to every response, errors included, refuses cross-site posts and parses form posts.
 */
export function uiPlugin(deps: UiDeps & { readonly assets: Assets }) {
  return fp(
    async (app: FastifyInstance) => {
      // A browser that lands on a problem (an unknown URL, an unknown event) sees it in the layout.
      app.problemPages.render = (problem) => ({
        html: deps.views.render('pages/problem.njk', { ...layoutContext(deps, 'problem'), problem }),
        headers: securityHeaders,
      });
      await app.register(async (ui) => {
        ui.addHook('onSend', async (_request, reply) => {
          for (const [name, value] of Object.entries(securityHeaders)) reply.header(name, value);
        });
        refuseCrossSite(ui, deps.config);
        registerFormParser(ui);
        registerAssetRoutes(ui, deps.assets);
        registerPages(ui, deps);
        registerLogPages(ui, deps);
        registerSettingsPage(ui, deps);
        registerQuarantinePage(ui, deps); // RULES (issue 7)
        registerAgentsPage(ui, deps);
        registerTodosPages(ui, deps);
        registerWebhooksPages(ui, deps);
      });
    },
    { name: 'hookline-ui', dependencies: ['hookline-errors'] },
  );
}
