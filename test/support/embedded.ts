import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { inject } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { type ManagedPostgres, startManagedPostgres } from '../../src/db/managed-postgres.ts';
import { openEmbedded, type PostgresOptions, type SqlDatabase } from '../../src/db/open.ts';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/runtime.ts';

/**
 * Embedded mode in tests: managed PostgreSQL servers made from the run's template cluster
 * (test/support/embedded-setup.ts), reached the way `hookline serve` reaches them. Nothing here
 * fakes the server: a runtime given `embeddedTarget()` starts up in embedded mode, adopts the
 * slot's running server and works on a database of its own.
 */

/** The run's directory of embedded-mode servers (test/support/embedded-setup.ts). */
export function embeddedRoot(): string {
  const dir = inject('embeddedRoot');
  if (!dir)
    throw new Error('the embedded test server is not set up: run this file through vitest (int or e2e tier)');
  return dir;
}

interface SlotServer {
  readonly dataDir: string;
  readonly server: ManagedPostgres;
}
let slot: Promise<SlotServer> | undefined;

/**
 * This worker slot's embedded server (a copy of the template, started by the slot's first test
 * file and adopted by the next ones). A connection held open here keeps a runtime that closes
 * from stopping it: the last client out stops the server, and this one is never out. The
 * globalSetup's teardown stops the slots' servers at the end of the run.
 */
function slotServer(): Promise<SlotServer> {
  slot ??= (async () => {
    const id = process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID ?? String(process.pid);
    const dataDir = path.join(embeddedRoot(), `slot-${id}`);
    if (!existsSync(path.join(dataDir, 'pg'))) {
      await mkdir(dataDir, { recursive: true, mode: 0o755 });
      await chmod(dataDir, 0o755);
      await promisify(execFile)('cp', [
        '-a',
        path.join(embeddedRoot(), 'template', 'pg'),
        path.join(dataDir, 'pg'),
      ]);
    }
    const server = await startManagedPostgres(dataDir, { database: 'postgres' });
    const keeper = new pg.Client({
      connectionString: server.urlFor('postgres'),
      application_name: 'test-keeper',
    });
    keeper.on('error', () => {});
    await keeper.connect();
    // Not a reason for the worker to stay alive.
    (keeper as unknown as { connection: { stream: { unref(): void } } }).connection.stream.unref();
    return { dataDir, server };
  })();
  return slot;
}

export interface EmbeddedTarget {
  /** For loadConfig: embedded mode (no DATABASE_URL) on the slot's data directory. */
  readonly env: { readonly HOOKLINE_DATA_DIR: string };
  /** For createRuntime / startServer: the database of this target. */
  readonly runtimeOptions: { readonly embeddedDatabase: string };
  readonly database: string;
  /** Drops the database (connections closed first). */
  drop(): Promise<void>;
}

/** A migrated database of its own on the slot's embedded server, copied from the template. */
export async function embeddedTarget(): Promise<EmbeddedTarget> {
  const { dataDir, server } = await slotServer();
  const database = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({
    connectionString: server.urlFor('postgres'),
    application_name: 'test-admin',
  });
  await admin.connect();
  try {
    // `hookline` on the slot's server is the migrated template nobody connects to.
    await admin.query(`create database ${admin.escapeIdentifier(database)} template hookline`);
  } finally {
    await admin.end();
  }
  return {
    env: { HOOKLINE_DATA_DIR: dataDir },
    runtimeOptions: { embeddedDatabase: database },
    database,
    drop: async () => {
      const c = new pg.Client({
        connectionString: server.urlFor('postgres'),
        application_name: 'test-admin',
      });
      await c.connect();
      try {
        await c.query(`drop database if exists ${c.escapeIdentifier(database)} with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** Opens an embedded target's database as the runtime would (pool on the managed server). */
export async function openEmbeddedTarget(
  options: PostgresOptions = {},
): Promise<SqlDatabase & { readonly target: EmbeddedTarget }> {
  const target = await embeddedTarget();
  const sql = await openEmbedded(target.env.HOOKLINE_DATA_DIR, { ...options, database: target.database });
  return {
    ...sql,
    target,
    close: async () => {
      await sql.close();
      await target.drop();
    },
  };
}

/**
 * A data directory of its own (a copy of the run's stopped, migrated template cluster), for tests
 * that run `hookline` itself or stop and restart its server. Its server is not running.
 */
export async function freshDataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(embeddedRoot(), 'data-'));
  await chmod(dir, 0o755);
  await promisify(execFile)('cp', ['-a', path.join(embeddedRoot(), 'template', 'pg'), path.join(dir, 'pg')]);
  return dir;
}

/** Removes a data directory made by freshDataDir, stopping its server first if one runs. */
export async function removeDataDir(dir: string): Promise<void> {
  const { stopManagedPostgresIn } = await import('../../src/db/managed-postgres.ts');
  await stopManagedPostgresIn(dir).catch(() => {});
  await rm(dir, { recursive: true, force: true });
}

/**
 * createRuntime in embedded mode on a database of its own (dropped when the runtime closes).
 * `env` is the rest of the configuration; it must not set DATABASE_URL.
 */
export async function createEmbeddedRuntime(
  env: Record<string, string>,
  options: RuntimeOptions = {},
  version?: string,
): Promise<Runtime> {
  const target = await embeddedTarget();
  const config = loadConfig({ ...target.env, ...env }, version);
  let runtime: Runtime;
  try {
    runtime = await createRuntime(config, { ...target.runtimeOptions, ...options });
  } catch (err) {
    await target.drop();
    throw err;
  }
  return {
    ...runtime,
    close: async () => {
      await runtime.close();
      await target.drop();
    },
  };
}
