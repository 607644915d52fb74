import type { Config } from '../config.ts';
import type { Logger } from '../logger.ts';
import { migrateToLatest, schemaAtHead } from './migrate.ts';
import { openEmbedded, openPostgres, type SqlDatabase } from './open.ts';

/**
 * The database a runtime serves from, opened and migrated: the first thing a start needs, and the
 * only part of it that waits on other processes (embedded mode's initdb and PostgreSQL, the
 * server's queries). Kept apart from runtime.ts so that `hookline serve` can begin it before it
 * loads the rest of the server (bench/README.md, "Start-up time").
 */

export interface OpenSqlOptions {
  /** Embedded mode, tests: a database of its own on the data directory's server (default: the one `pg/hookline.json` names). */
  readonly embeddedDatabase?: string;
  /** Embedded mode: told when the start begins to wait on initdb or PostgreSQL (managed-postgres.ts). */
  readonly onWaiting?: () => void;
}

/** Embedded mode starts (or adopts) its own PostgreSQL in the data directory; then one code path. */
export async function openSql(
  config: Config,
  logger?: Logger,
  options: OpenSqlOptions = {},
): Promise<SqlDatabase> {
  if (config.mode === 'embedded') {
    return openEmbedded(config.dataDir, {
      onInfo: (message) => logger?.info(message),
      onError: (message) => logger?.error(message),
      ...(options.onWaiting ? { onWaiting: options.onWaiting } : {}),
      ...(options.embeddedDatabase ? { database: options.embeddedDatabase } : {}),
    });
  }
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required outside embedded mode');
  return openPostgres(config.databaseUrl);
}

/**
 * Migrations at start. A schema at head (every start but the first) is found on the serving pool;
 * pending migrations run on a connection of their own without the serving bound on a statement's
 * duration (db/open.ts): a migration may run long, an index over a big table say.
 */
export async function migrateAtStart(sql: SqlDatabase): Promise<void> {
  if (await schemaAtHead(sql.db)) return;
  const unbounded = openPostgres(sql.url, { max: 1, queryTimeoutMs: 0 });
  try {
    await migrateToLatest(unbounded.db);
  } finally {
    await unbounded.close();
  }
}

/** Opens the database and migrates it; closed again when the migrations fail. */
export async function prepareDatabase(
  config: Config,
  logger?: Logger,
  options: OpenSqlOptions = {},
): Promise<SqlDatabase> {
  const sql = await openSql(config, logger, options);
  try {
    await migrateAtStart(sql);
  } catch (err) {
    await sql.close().catch(() => {});
    throw err;
  }
  return sql;
}
