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
      // The database first: embedded mode's initdb (a first start) or PostgreSQL's own start run
      // while the server's modules load. Loading them holds the event loop for most of a second, so
      // the import waits until initdb or the server has been spawned (bench/README.md, "Start-up
      // time"). With DATABASE_URL the database is ready before the import: a connection in flight
      // while the loop is held finds, when it comes back, its connect timeout's timer run before
      // the server's answer is read, and fails on a loaded machine (bench:boot did, once).
      const [{ createLogger }, { prepareDatabase }] = await Promise.all([
        import('../../logger.ts'),
        import('../../db/prepare.ts'),
      ]);
      const logger = createLogger(config);
      let waiting!: () => void;
      const handedOff = new Promise<void>((resolve) => {
        waiting = resolve;
      });
      const database = prepareDatabase(config, logger, { onWaiting: waiting });
      const settled = database.then(
        () => {},
        () => {}, // handled where createRuntime awaits it; not unhandled while the modules load
      );
      await Promise.race(config.mode === 'embedded' ? [handedOff, settled] : [settled]);
      // Loaded here so that client commands do not pay for the whole server at start-up.
      let server: typeof import('../../server.ts');
      try {
        server = await import('../../server.ts');
      } catch (err) {
        await database.then((sql) => sql.close()).catch(() => {});
        throw err;
      }
      await server.startServer(config, { handleSignals: true, runtime: { logger, database } });
      // Node writes the compile cache (bin/hookline.mjs) when the process exits; written soon after
      // the first start too, so that a server stopped by `kill -9` still leaves it for the next one.
      setTimeout(() => module.flushCompileCache(), 10_000).unref();
    });
}
