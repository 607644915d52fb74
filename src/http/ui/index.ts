import { listProviders } from '../../../projections/providers.ts';
import { getSettings } from '../../../projections/settings.ts';
import type { Live } from '../../live/index.ts';
import type { Runtime } from '../../runtime.ts';
import { loadAssets } from './assets.ts';
import { uiPlugin } from './plugin.ts';
import { createViews } from './views.ts';

export { uiPlugin } from './plugin.ts';

/** The screens over a runtime and the process's live hub (one line in buildApp). */
export function createUi(runtime: Runtime, live: Live) {
  const assets = loadAssets();
  return uiPlugin({
    config: runtime.config,
    clock: runtime.clock,
    db: runtime.db,
    store: runtime.store,
    projections: runtime.projections,
    hub: live.hub,
    listProviders: (db = runtime.db) => listProviders(runtime.config, db, runtime.clock.now()),
    providerNames: () => providerNames(runtime),
    views: createViews({ assets, version: runtime.config.version }),
    assets,
  });
}

/** Every provider name the log can filter by: configured ones and the read model's. */
async function providerNames(runtime: Pick<Runtime, 'config' | 'db'>): Promise<string[]> {
  const rows = await runtime.db.selectFrom('providers').select('name').execute();
  const configured = [
    'codehost',
    'payments',
    'chat',
    ...runtime.config.broker.channels.map((c) => `broker:${c}`),
  ];
  const rest = rows.map((r) => r.name).filter((n) => !configured.includes(n));
  return [...configured, ...rest.sort()];
}

/** sse_retry_ms from the settings read model: the stream's `retry:` at each connect. */
export const sseRetryMs = async (runtime: Pick<Runtime, 'db'>): Promise<number> =>
  (await getSettings(runtime.db)).settings.sse_retry_ms;
