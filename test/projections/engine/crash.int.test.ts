import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createProjectionRunner } from '../../../projections/engine/runner.ts';
import { allProjections } from '../../../projections/index.ts';
import { migrateToLatest } from '../../../src/db/migrate.ts';
import { openEmbedded, openPostgres, type SqlDatabase } from '../../../src/db/open.ts';
import { createSqlEventStore } from '../../../src/eventstore/sql/store.ts';
import { freshDataDir, removeDataDir } from '../../support/embedded.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import { compareWithRebuild, type Harness, testLogger } from '../support.ts';

const hasPg = await postgresAvailable();
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

describe('crash: kill -9 while projections apply under load, embedded mode', () => {
  let dir: string | undefined;
  afterAll(async () => {
    if (dir) await removeDataDir(dir);
  });

  it('restarts over the data directory and every read model equals a rebuild from the log', async () => {
    dir = await freshDataDir();
    const killedAt = await runAndKill({ CRASH_DATA_DIR: dir }, 1000);
    // The killed process's PostgreSQL outlives it; opening the directory again adopts it.
    const sqlDb = await openEmbedded(dir, { max: 6 });
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
