import module from 'node:module';
import type { Command } from 'commander';
import { assertPortFree } from '../startup-errors.ts';
import { loadCliConfig } from '../support.ts';

/** `hookline serve`: the service itself, configured by the environment (docs/reference/configuration.md). */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description(
      'run the hookline service (on its own PostgreSQL in HOOKLINE_DATA_DIR unless DATABASE_URL is set)',
    )
    .action(async () => {
      const config = loadCliConfig();
      await assertPortFree(config); // before the data directory, the database or anything else
      // Loaded here so that client commands do not pay for the whole server at start-up.
      const { startServer } = await import('../../server.ts');
      await startServer(config, { handleSignals: true });
      // Node writes the compile cache (bin/hookline.mjs) when the process exits; written soon after
      // the first start too, so that a server stopped by `kill -9` still leaves it for the next one.
      setTimeout(() => module.flushCompileCache(), 10_000).unref();
    });
}
