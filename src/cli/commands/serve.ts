import type { Command } from 'commander';
import { acquireDataDirLock, DataDirLockedError } from '../../db/lockfile.ts';
import { assertPortFree } from '../startup-errors.ts';
import { CliExit, loadCliConfig } from '../support.ts';

/** `hookline serve`: the service itself, configured by the environment (docs/reference/configuration.md). */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the hookline service (embedded PGlite in HOOKLINE_DATA_DIR unless DATABASE_URL is set)')
    .action(async () => {
      const config = loadCliConfig();
      await assertPortFree(config); // before the data directory, the database or anything else
      // Loaded here so that client commands do not pay for the whole server at start-up.
      const { startServer } = await import('../../server.ts');
      try {
        await startServer(config, {
          handleSignals: true,
          beforeOpen:
            config.mode === 'embedded'
              ? async () => {
                  const lock = await acquireDataDirLock(config.dataDir, {
                    baseUrl: config.baseUrl,
                    command: 'serve',
                    onStale: (holder) =>
                      process.stderr.write(
                        `hookline: clearing a stale lock in ${config.dataDir}` +
                          `${holder ? ` left by pid ${holder.pid}, which is no longer running` : ''}\n`,
                      ),
                  });
                  return lock.release;
                }
              : undefined,
        });
      } catch (err) {
        if (err instanceof DataDirLockedError) throw new CliExit(`hookline: ${err.message}`, 1);
        throw err;
      }
    });
}
