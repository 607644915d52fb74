import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { registerForms } from '../forms.ts';
import { refuseCrossSite } from '../same-origin.ts';
import { registerAgentsPage } from './agents-page.ts';
import { type Assets, registerAssetRoutes } from './assets.ts';
import { layoutContext } from './context.ts';
import { type FriendsPageDeps, registerFriendsPage } from './friends-page.ts';
import { registerLogPages } from './log-pages.ts';
import { registerPages } from './pages.ts';
import { registerQuarantinePage } from './quarantine-page.ts'; // RULES (issue 7)
import { registerReplayForm } from './replay-form.ts';
import { registerSettingsPage } from './settings-page.ts';
import { registerTodosPages } from './todos-pages.ts';
import { registerWebhooksPages } from './webhooks-pages.ts';

/**
 * The web UI (spec 4.3, 4.5 to 4.9): dashboard, log, detail, providers, settings and /static,
 * and the console of the human's own agents, todos and webhooks.
 * Its routes live in one encapsulated context that refuses cross-site posts and parses form posts;
 * the security headers (CSP and friends) are set on every response by src/http/security-headers.ts.
 */
export function uiPlugin(deps: FriendsPageDeps & { readonly assets: Assets }) {
  return fp(
    async (app: FastifyInstance) => {
      // A browser that lands on a problem (an unknown URL, an unknown event) sees it in the layout.
      app.problemPages.render = (problem) => ({
        html: deps.views.render('pages/problem.njk', { ...layoutContext(deps, 'problem'), problem }),
        headers: {}, // the security headers are on every response (src/http/security-headers.ts)
      });
      await app.register(async (ui) => {
        refuseCrossSite(ui, deps.config);
        await registerForms(ui);
        await registerAssetRoutes(ui, deps.assets);
        registerPages(ui, deps);
        registerLogPages(ui, deps);
        registerReplayForm(ui, deps);
        registerSettingsPage(ui, deps);
        registerQuarantinePage(ui, deps); // RULES (issue 7)
        registerAgentsPage(ui, deps);
        registerTodosPages(ui, deps);
        registerWebhooksPages(ui, deps);
        registerFriendsPage(ui, deps);
      });
    },
    { name: 'hookline-ui', dependencies: ['hookline-errors'] },
  );
}
