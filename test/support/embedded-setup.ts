import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { startManagedPostgres, stopManagedPostgresIn } from '../../src/db/managed-postgres.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { openPostgres } from '../../src/db/open.ts';

/**
 * vitest globalSetup of the int and e2e tiers: embedded mode's PostgreSQL for the whole run,
 * through the real code path (src/db/managed-postgres.ts).
 *
 * - `template/`: a data directory initialised and migrated once, stopped. A test that runs the
 *   `hookline` binary (or needs a data directory of its own) copies it (freshDataDir).
 * - `shared/`: a copy of it, started and kept running by a connection held here. In-process
 *   runtimes adopt this server and each gets a database of its own (embeddedTarget), so a test
 *   pays a CREATE DATABASE, not an initdb and a start.
 *
 * Teardown stops every server left under the run's directory and removes it.
 */
const ROOT_VAR = 'HOOKLINE_TEST_EMBEDDED_ROOT';

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env[ROOT_VAR]) return undefined; // the other tier's setup already made one
  const root = await mkdtemp(path.join(os.tmpdir(), 'hookline-test-'));
  await chmod(root, 0o755); // PostgreSQL runs as another user when the tests run as root
  const template = path.join(root, 'template');
  const first = await startManagedPostgres(template);
  const migrating = openPostgres(first.url, { max: 1, queryTimeoutMs: 0 });
  try {
    await migrateToLatest(migrating.db);
  } finally {
    await migrating.close();
  }
  await first.stop();

  const shared = path.join(root, 'shared');
  await promisify(execFile)('cp', ['-a', template, shared]);
  const server = await startManagedPostgres(shared);
  const keeper = new pg.Client({
    connectionString: server.urlFor('postgres'),
    application_name: 'test-keeper',
  });
  await keeper.connect();
  process.env[ROOT_VAR] = root;

  return async () => {
    await keeper.end().catch(() => {});
    await stopLeftServers(root);
    await rm(root, { recursive: true, force: true });
    delete process.env[ROOT_VAR];
  };
}

/** Stops every managed server a test left running under `root` (a data directory is `<dir>/pg`). */
async function stopLeftServers(root: string, depth = 0): Promise<void> {
  const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    const dir = path.join(root, e.name);
    if (e.name === 'pg') {
      await stopManagedPostgresIn(root).catch(() => {});
    } else if (depth < 3) {
      await stopLeftServers(dir, depth + 1);
    }
  }
}
