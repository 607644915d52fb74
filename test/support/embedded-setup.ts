import { chmod, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startManagedPostgres, stopManagedPostgresIn } from '../../src/db/managed-postgres.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { openPostgres } from '../../src/db/open.ts';

/**
 * vitest globalSetup of the int and e2e tiers: embedded mode's PostgreSQL for the whole run,
 * through the real code path (src/db/managed-postgres.ts).
 *
 * - `template/`: a data directory initialised and migrated once, stopped. A test that runs the
 *   `hookline` binary (or needs a data directory of its own) copies it (freshDataDir).
 * - `slot-<n>/`: a copy of it per vitest worker slot, started by the first test file of that
 *   slot and left running for the next (test/support/embedded.ts). In-process runtimes adopt it
 *   and each gets a database of its own, so a test pays a CREATE DATABASE, not an initdb and a
 *   start; the files of one slot run one after the other, so no other test's transactions hold
 *   back what `$all` shows (the xid8 horizon is the whole server's).
 *
 * Teardown stops every server left under the run's directory and removes it.
 */
declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's directory of embedded-mode servers (read it with embeddedRoot()). */
    embeddedRoot: string;
  }
}

/** Each tier (int, e2e) gets a directory of its own, removed when that tier is done. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'hookline-test-'));
  await chmod(root, 0o755); // PostgreSQL runs as another user when the tests run as root
  const template = path.join(root, 'template');
  // Two databases migrated: `postgres`, which a hookline started on a copy serves from (the one
  // pg/hookline.json names), and `hookline`, which nobody connects to, the template of the slots'
  // per-test databases (CREATE DATABASE copies only a template without other sessions).
  const first = await startManagedPostgres(template, { database: 'hookline' });
  for (const url of [first.url, first.urlFor('postgres')]) {
    const migrating = openPostgres(url, { max: 1, queryTimeoutMs: 0 });
    try {
      await migrateToLatest(migrating.db);
    } finally {
      await migrating.close();
    }
  }
  // Stopped whatever else is connected: stop() leaves a server running while it sees other
  // clients, and the pools just closed may still be listed for a moment. A copy of a running
  // template would hold its postmaster.pid, and every copy would adopt the template's server.
  await stopManagedPostgresIn(template);

  project.provide('embeddedRoot', root);

  return async () => {
    await stopLeftServers(root);
    await rm(root, { recursive: true, force: true });
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
