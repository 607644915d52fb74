import type { Command } from 'commander';
import { globalOptions, loadCliConfig } from '../support.ts';

/**
 * `hookline migrate`: brings the SQL schema to the latest migration (serve also does at start).
 * It connects directly in every mode; in embedded mode it starts the data directory's PostgreSQL
 * for the while, or shares it with a hookline already running there.
 */
export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('run pending database migrations')
    .action(async (_options: unknown, cmd: Command) => {
      const config = loadCliConfig();
      const json = globalOptions(cmd).json;
      // Loaded here, not at the top: the drivers are not needed for `--help` or the other commands.
      const { openPostgres } = await import('../../db/open.ts');
      const { openSql } = await import('../../db/prepare.ts');
      const { migrateToLatest } = await import('../../db/migrate.ts');
      const sql = await openSql(config);
      let results: Awaited<ReturnType<typeof migrateToLatest>>;
      try {
        // A migration may run long (an index over a big table): no bound on its statements.
        const unbounded = openPostgres(sql.url, { max: 1, queryTimeoutMs: 0 });
        try {
          results = await migrateToLatest(unbounded.db);
        } finally {
          await unbounded.close();
        }
      } finally {
        await sql.close();
      }
      const applied = results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
      if (json) {
        process.stdout.write(`${JSON.stringify({ mode: config.mode, applied })}\n`);
      } else if (applied.length === 0) {
        process.stdout.write(`${config.mode}: the schema is up to date\n`);
      } else {
        process.stdout.write(`${config.mode}: applied ${applied.length} migration(s)\n`);
        for (const name of applied) process.stdout.write(`  ${name}\n`);
      }
    });
}
