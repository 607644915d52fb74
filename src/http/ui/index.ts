import { listProviders, providerNames } from '../../../projections/providers.queries.ts';
import { getSettings } from '../../../projections/settings.queries.ts';
import type { Live } from '../../live/index.ts';
import type { Runtime } from '../../runtime.ts';
import type { SecretBox } from '../../webhooks/secret-box.ts';
import { loadAssets } from './assets.ts';
import { uiPlugin } from './plugin.ts';
import { createViews } from './views.ts';

export { uiPlugin } from './plugin.ts';

/** The screens over a runtime and the process's live hub (one line in buildApp). */
export function createUi(runtime: Runtime, live: Live, shared: { readonly secretBox: SecretBox }) {
  const assets = loadAssets();
  return uiPlugin({
    config: runtime.config,
    clock: runtime.clock,
    db: runtime.db,
    store: runtime.store,
    projections: runtime.projections,
    hub: live.hub,
    replay: runtime.replay,
    listProviders: (db = runtime.db) => listProviders(runtime.config, db, runtime.clock.now()),
    providerNames: () => providerNames(runtime.config, runtime.db),
    views: createViews({ assets, version: runtime.config.version }),
    assets,
    secretBox: shared.secretBox,
  });
}

/** sse_retry_ms from the settings read model: the stream's `retry:` at each connect. */
export const sseRetryMs = async (runtime: Pick<Runtime, 'db'>): Promise<number> =>
  (await getSettings(runtime.db)).settings.sse_retry_ms;
