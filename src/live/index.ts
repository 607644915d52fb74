import fp from 'fastify-plugin';
import { listProviders } from '../../projections/providers.queries.ts';
import type { Runtime } from '../runtime.ts';
import { createLiveHub, type LiveHub, type LiveHubOptions } from './hub.ts';
import { type Connection, loadStatusSnapshot, type StatusSnapshot } from './status.ts';

export type { LiveHub } from './hub.ts';

export interface Live {
  readonly hub: LiveHub;
  readonly loadStatus: (connection: Connection) => Promise<StatusSnapshot>;
}

type LiveRuntime = Pick<Runtime, 'store' | 'clock' | 'logger' | 'config' | 'db' | 'projections'>;

/**
 * The live side of one process: the hub over the one `$all` subscription, with the status
 * snapshot read from the providers read model. Build it once in buildApp and hand the hub to
 * every consumer (SSE stream, MCP doorbells).
 */
export function createLive(runtime: LiveRuntime, options?: LiveHubOptions): Live {
  const loadStatus = (connection: Connection) =>
    loadStatusSnapshot(
      { clock: runtime.clock, listProviders: (now) => listProviders(runtime.config, runtime.db, now) },
      connection,
    );
  const hub = createLiveHub(
    {
      store: runtime.store,
      clock: runtime.clock,
      logger: runtime.logger,
      loadStatus,
      // A transition's snapshot should count the delivery that caused it (log and providers).
      settle: (position) => runtime.projections.waitFor(position, { timeoutMs: 1000 }),
    },
    options,
  );
  return { hub, loadStatus };
}

/** Starts the hub when the app is ready and stops it on close. */
export function livePlugin(live: Live) {
  return fp(
    async (app) => {
      app.addHook('onReady', async () => {
        await live.hub.start();
      });
      app.addHook('onClose', async () => {
        await live.hub.stop();
      });
    },
    { name: 'hookline-live' },
  );
}
