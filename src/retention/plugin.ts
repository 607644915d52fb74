import fp from 'fastify-plugin';
import type { Runtime } from '../runtime.ts';
import { createRetentionJob, DEFAULT_RETENTION_INTERVAL_MS, type RetentionOptions } from './job.ts';

/** Runs the prune job while the app is up: the first cycle one interval after start, then every interval. */
export function retentionPlugin(
  runtime: Pick<Runtime, 'store' | 'db' | 'sql' | 'clock' | 'logger'>,
  options: RetentionOptions = {},
) {
  const job = createRetentionJob(runtime, {
    initialDelayMs: options.intervalMs ?? DEFAULT_RETENTION_INTERVAL_MS,
    ...options,
  });
  return fp(
    async (app) => {
      app.addHook('onReady', async () => job.start());
      app.addHook('onClose', async () => job.stop());
    },
    { name: 'hookline-retention' },
  );
}
