import type { Command } from 'commander';
import type { MigrationResult } from 'kysely/migration';
import type { Config } from '../../config.ts';
import {
  acquireDataDirLock,
  DataDirLockedError,
  type LockHolder,
  readLockHolder,
} from '../../db/lockfile.ts';
import type { SqlDatabase } from '../../db/open.ts';
import { CliExit, globalOptions, loadCliConfig } from '../support.ts';

/** Asks a running server its version through /healthz; undefined when it does not answer. */
async function serverVersion(baseUrl: string): Promise<string | undefined> {
  try {
    const res = await fetch(new URL('/healthz', baseUrl), { signal: AbortSignal.timeout(3000) });
    const body: unknown = await res.json();
    return body && typeof body === 'object' && 'version' in body ? String(body.version) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A server holding the embedded directory ran every migration of its version when it started
 * (runtime.ts), so going through it means asking which version it runs. A different version, or
 * no answer, is refused: PGlite cannot be opened by a second process.
 */
async function throughServer(config: Config, holder: LockHolder): Promise<string> {
  const where = holder.baseUrl ?? `hookline ${holder.command ?? ''}`.trim();
  const running = holder.baseUrl ? await serverVersion(holder.baseUrl) : undefined;
  if (running === config.version) {
    return `the data directory ${config.dataDir} is held by the server at ${where} (pid ${holder.pid}), which runs version ${running} and migrated it to the latest schema when it started: nothing to do`;
  }
  const reason = running ? `runs version ${running}, not ${config.version}` : 'did not answer on /healthz';
  throw new CliExit(
    `hookline migrate: the data directory ${config.dataDir} is held by ${where} (pid ${holder.pid}), which ${reason}. ` +
      'Embedded mode is one process: stop it, then run `hookline migrate` again (serve also migrates at start).',
    1,
  );
}

async function migrateDirectly(config: Config): Promise<readonly MigrationResult[]> {
  // Loaded here, not at the top: the drivers are not needed for `--help` or the other commands.
  const { openPglite, openPostgres } = await import('../../db/open.ts');
  const { migrateToLatest } = await import('../../db/migrate.ts');
  let sql: SqlDatabase;
  let release: (() => Promise<void>) | undefined;
  if (config.mode === 'embedded') {
    try {
      release = (await acquireDataDirLock(config.dataDir, { command: 'migrate' })).release;
    } catch (err) {
      if (err instanceof DataDirLockedError) throw new CliExit(`hookline migrate: ${err.message}`, 1);
      throw err;
    }
    sql = await openPglite(config.dataDir);
  } else {
    // A migration may run long (an index over a big table): no bound on its statements.
    sql = openPostgres(config.databaseUrl ?? '', { max: 1, queryTimeoutMs: 0 });
  }
  try {
    return await migrateToLatest(sql.db);
  } finally {
    await sql.close();
    await release?.();
  }
}

/** `hookline migrate`: brings the SQL schema to the latest migration (serve also does at start). */
export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('run pending database migrations (through the running server in embedded mode)')
    .action(async (_options: unknown, cmd: Command) => {
      const config = loadCliConfig();
      const json = globalOptions(cmd).json;
      const holder = config.mode === 'embedded' ? await readLockHolder(config.dataDir) : undefined;
      if (holder) {
        const message = await throughServer(config, holder);
        process.stdout.write(
          json ? `${JSON.stringify({ through: holder.baseUrl, applied: [], message })}\n` : `${message}\n`,
        );
        return;
      }
      const results = await migrateDirectly(config);
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
