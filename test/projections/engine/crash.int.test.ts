import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createProjectionRunner } from '../../../projections/engine/runner.ts';
import { allProjections } from '../../../projections/index.ts';
import { migrateToLatest } from '../../../src/db/migrate.ts';
import { openPglite, openPostgres, type SqlDatabase } from '../../../src/db/open.ts';
import { clearStalePglitePid, PGLITE_SUBDIR } from '../../../src/db/pglite-stale.ts';
import { createSqlEventStore } from '../../../src/eventstore/sql/store.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import { compareWithRebuild, type Harness, testLogger } from '../support.ts';

const hasPg = await postgresAvailable();
// Opening PGlite on disk, twice, and replaying eight read models take a while on a busy 2-core machine.
const fixture = fileURLToPath(new URL('./fixtures/crash-child.ts', import.meta.url));

interface Report {
  appended: number;
  checkpoints: Record<string, string>;
}

/**
 * Runs the child until it has appended `minAppended` events and stream_stats has applied some of
 * them, lets it run two more reports (appends and applies in flight), then kills it with SIGKILL.
 */
async function runAndKill(env: Record<string, string>, minAppended: number): Promise<Report> {
  const child: ChildProcess = spawn(process.execPath, [fixture], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ?? code)),
  );
  let last: Report | undefined;
  let after = 0;
  for await (const line of createInterface({ input: child.stdout! })) {
    const report = JSON.parse(line) as Report;
    last = report;
    const applying = report.checkpoints.stream_stats && report.checkpoints.stream_stats !== 'start';
    if (report.appended >= minAppended && applying && ++after >= 3) break;
  }
  if (!last) throw new Error(`the crash child ended without a report: ${stderr}`);
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
  return last;
}

/** Restart over what the killed process left; after catch-up every read model equals a rebuild. */
async function restartAndCompare(sqlDb: SqlDatabase, killedAt: Report): Promise<void> {
  await migrateToLatest(sqlDb.db);
  const store = await createSqlEventStore(sqlDb, { pollMs: 100 });
  const h: Harness = { sql: sqlDb, store, close: async () => {} };
  const runner = createProjectionRunner({
    sql: sqlDb,
    store,
    logger: testLogger,
    projections: allProjections,
    options: { batchMs: 20, standbyRetryMs: 100 },
  });
  await runner.start();
  try {
    let events = 0;
    for await (const _ of store.readAll()) events++;
    expect(events).toBeGreaterThanOrEqual(killedAt.appended);
    for (const projection of allProjections) {
      const { live, rebuilt } = await compareWithRebuild(h, runner, projection);
      expect(live, `read model ${projection.name} after restart`).toEqual(rebuilt);
    }
    const stats = (await runner.status()).find((s) => s.name === 'stream_stats')!;
    expect(stats.lagEvents).toBe(0);
  } finally {
    await runner.stop();
    await store.close();
  }
}

describe('crash: kill -9 while projections apply under load, embedded PGlite on disk', () => {
  let dir: string | undefined;
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('restarts over the data directory and every read model equals a rebuild from the log', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'hookline-crash-'));
    const killedAt = await runAndKill({ CRASH_DATA_DIR: dir }, 400);
    // PGlite leaves its postmaster.pid behind when killed; reopening with it there hangs.
    expect(existsSync(path.join(dir, PGLITE_SUBDIR, 'postmaster.pid'))).toBe(true);
    expect(await clearStalePglitePid(dir)).toBe(true);
    const sqlDb = await openPglite(dir);
    try {
      await restartAndCompare(sqlDb, killedAt);
    } finally {
      await sqlDb.close();
    }
  }, 300_000);
});

describe.runIf(hasPg)('crash: kill -9 while projections apply under load, PostgreSQL', () => {
  let testDb: TestDatabase | undefined;
  afterAll(async () => {
    await testDb?.drop();
  });

  it('restarts and every read model equals a rebuild from the log', async () => {
    testDb = await createTestDatabase();
    const killedAt = await runAndKill({ CRASH_DATABASE_URL: testDb.url }, 1000);
    const sqlDb = openPostgres(testDb.url, { max: 6 });
    try {
      await restartAndCompare(sqlDb, killedAt);
    } finally {
      await sqlDb.close();
    }
  }, 300_000);
});
