import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readCheckpoint } from '../../projections/engine/checkpoints.ts';
import type { ProjectionStatus } from '../../projections/engine/types.ts';
import { allProjections } from '../../projections/index.ts';
import { openEmbedded, openPostgres, type SqlDatabase } from '../../src/db/open.ts';
import { StreamNotFoundError } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { type ServerProcess, signedDelivery, startHookline } from '../server/harness.ts';
import { freshDataDir, removeDataDir } from '../support/embedded.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';
import { compareWithRebuild, type Harness } from './support.ts';

/**
 * Issue 2, point 5, on the real service: `kill -9` `hookline serve` while its projections apply
 * under load from concurrent signed webhooks; after a restart (embedded: on the PostgreSQL the dead
 * process left running, nothing cleaned up by hand) and catch-up, every read model equals a rebuild from the
 * log, and every delivery acknowledged with 202 before the kill is in the log.
 * (crash.int.test.ts does the same on a child that runs only the store and the runner.)
 */

const hasPg = await postgresAvailable();
const SENDERS = 8;

interface Acked {
  readonly id: number;
  readonly body: string;
}

/** `SENDERS` concurrent senders of signed codehost deliveries, until stopped or refused. */
function driveLoad(url: string) {
  const acked: Acked[] = [];
  const refusals: string[] = [];
  let stopped = false;
  const sender = async (k: number) => {
    for (let n = 0; !stopped; n++) {
      const body = JSON.stringify({ sender: k, n, note: 'crash under load', pad: 'x'.repeat(200 + n) });
      const d = await signedDelivery(body);
      let res: Response;
      try {
        res = await fetch(`${url}/webhooks/codehost`, { method: 'POST', headers: d.headers, body: d.body });
      } catch {
        return; // the service is gone: this delivery was never acknowledged
      }
      const text = await res.text().catch(() => undefined);
      if (text === undefined) return; // killed while answering: no acknowledgement either
      if (res.status !== 202) {
        refusals.push(`${res.status} ${text}`);
        continue;
      }
      acked.push({ id: (JSON.parse(text) as { id: number }).id, body });
    }
  };
  const all = Promise.all(Array.from({ length: SENDERS }, (_, k) => sender(k)));
  return {
    acked,
    refusals,
    stop: async () => {
      stopped = true;
      await all;
    },
  };
}

async function projectionStatus(url: string): Promise<ProjectionStatus[]> {
  const res = await fetch(`${url}/admin/projections`);
  if (res.status !== 200) throw new Error(`/admin/projections answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { projections: ProjectionStatus[] }).projections;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until `minAcked` deliveries are acknowledged and the read models are part-way: some
 * projection has applied events and is still behind the log. Returns the statuses it saw then.
 */
async function untilApplyingUnderLoad(
  server: ServerProcess,
  load: ReturnType<typeof driveLoad>,
  minAcked: number,
): Promise<ProjectionStatus[]> {
  for (;;) {
    if (load.refusals.length > 0)
      throw new Error(`deliveries refused: ${load.refusals.slice(0, 3).join('\n')}`);
    if (load.acked.length >= minAcked) {
      const statuses = await projectionStatus(server.url);
      const applied = statuses.some((s) => s.position !== 'start');
      const behind = statuses.some((s) => s.lagEvents > 0);
      if (applied && behind) return statuses;
    }
    await sleep(50);
  }
}

/** Polls the restarted service until every read model is active and has no lag. */
async function untilCaughtUp(url: string): Promise<void> {
  for (;;) {
    const statuses = await projectionStatus(url);
    if (statuses.every((s) => s.state === 'active' && s.lagEvents === 0)) return;
    await sleep(200);
  }
}

/** Opens what the stopped service left: the store and its SQL database, as a comparison harness. */
async function openLeftovers(target: { dataDir: string } | { url: string }): Promise<Harness> {
  let sqlDb: SqlDatabase | undefined;
  try {
    sqlDb =
      'dataDir' in target
        ? await openEmbedded(target.dataDir, { max: 4 })
        : openPostgres(target.url, { max: 4 });
    const store = await createSqlEventStore(sqlDb, { pollMs: 100 });
    const opened = sqlDb;
    return {
      sql: opened,
      store,
      close: async () => {
        await store.close();
        await opened.close();
      },
    };
  } catch (err) {
    await sqlDb?.close();
    throw err;
  }
}

/**
 * No runner runs here: the service applied everything and stopped. "Waiting" is checking that
 * the checkpoint it left stands at the log's head, so the tables compared are the service's own.
 */
function stoppedRunner(h: Harness) {
  return {
    waitFor: async (position: string, options: { projection?: string } = {}) => {
      const name = options.projection ?? '';
      const checkpoint = await readCheckpoint(h.sql.db, name);
      if (checkpoint?.position !== position) {
        throw new Error(
          `read model ${name} was left at ${checkpoint?.position}, the log's head is ${position}`,
        );
      }
    },
  };
}

async function expectEveryAckInTheLog(h: Harness, acked: readonly Acked[]): Promise<void> {
  const stored = new Map<number, string>();
  try {
    for await (const e of h.store.readStream('deliveries')) {
      stored.set(Number(e.revision) + 1, new TextDecoder().decode(e.data));
    }
  } catch (err) {
    if (!(err instanceof StreamNotFoundError)) throw err;
  }
  const lost = acked.filter((a) => stored.get(a.id) !== a.body);
  expect(
    lost.map((a) => a.id),
    'deliveries acknowledged with 202 but not in the log',
  ).toEqual([]);
}

/** The embedded server's postmaster, as `<dataDir>/pg/postmaster.pid` names it. */
function postmasterPid(dataDir: string): number | undefined {
  try {
    return Number(readFileSync(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
}

/** The scenario, for one storage mode: load, kill -9, restart, catch up, stop, compare. */
async function crashUnderLoad(
  dataDir: string,
  env: Record<string, string>,
  minAcked: number,
  started: ServerProcess[],
): Promise<{
  acked: readonly Acked[];
  first: ServerProcess;
  second: ServerProcess;
  postmasters: { before?: number; after?: number };
}> {
  const first = await startHookline(dataDir, env);
  started.push(first);
  await first.healthy();
  const before = postmasterPid(dataDir);

  const load = driveLoad(first.url);
  await untilApplyingUnderLoad(first, load, minAcked);
  first.kill('SIGKILL');
  expect((await first.exited).signal).toBe('SIGKILL');
  await load.stop();
  expect(load.acked.length).toBeGreaterThanOrEqual(minAcked);

  const second = await startHookline(dataDir, env);
  started.push(second);
  await second.healthy();
  const after = postmasterPid(dataDir);
  await untilCaughtUp(second.url);
  second.kill('SIGTERM');
  expect(await second.exited, second.stderr()).toEqual({ code: 0, signal: null });
  return { acked: load.acked, first, second, postmasters: { before, after } };
}

async function expectReadModelsEqualRebuild(h: Harness): Promise<void> {
  const runner = stoppedRunner(h);
  for (const projection of allProjections) {
    const { live, rebuilt } = await compareWithRebuild(h, runner, projection);
    expect(live, `read model ${projection.name} after the restart`).toEqual(rebuilt);
  }
}

/** Ends whatever a test left running, so the next one starts on a free port and directory. */
async function killAll(started: ServerProcess[]): Promise<void> {
  for (const p of started.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) p.kill('SIGKILL');
    await p.exited;
  }
}

describe('crash of the service: kill -9 under webhook load, embedded', () => {
  let dataDir: string | undefined;
  const started: ServerProcess[] = [];

  afterEach(async () => {
    await killAll(started);
    if (dataDir) await removeDataDir(dataDir);
  });

  it('restarts on the PostgreSQL the killed process left running; every read model equals a rebuild, every 202 is in the log', async () => {
    dataDir = await freshDataDir();
    const { acked, postmasters } = await crashUnderLoad(dataDir, {}, 150, started);
    // The restart adopted the server the killed process had started, with no clean-up between.
    expect(postmasters.after).toBe(postmasters.before);

    const h = await openLeftovers({ dataDir });
    try {
      await expectEveryAckInTheLog(h, acked);
      await expectReadModelsEqualRebuild(h);
    } finally {
      await h.close();
    }
  }, 600_000);
});

describe.runIf(hasPg)('crash of the service: kill -9 under webhook load, PostgreSQL', () => {
  let dataDir: string | undefined;
  let testDb: TestDatabase | undefined;
  const started: ServerProcess[] = [];

  afterEach(async () => {
    await killAll(started);
    await testDb?.drop();
    if (dataDir) await removeDataDir(dataDir);
  });

  it('restarts; every read model equals a rebuild, every 202 is in the log', async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'hookline-service-crash-'));
    testDb = await createTestDatabase();
    const { acked } = await crashUnderLoad(dataDir, { DATABASE_URL: testDb.url }, 400, started);

    const h = await openLeftovers({ url: testDb.url });
    try {
      await expectEveryAckInTheLog(h, acked);
      await expectReadModelsEqualRebuild(h);
    } finally {
      await h.close();
    }
  }, 600_000);
});

/**
 * Issue 17, point 5: a burst of `total` signed deliveries from 32 senders, each sender retrying a
 * refused one with the same delivery id (as providers do) until it is acknowledged or the service
 * is gone. `onAck` sees every acknowledgement as it comes.
 */
function burst(url: string, total: number, onAck: (count: number) => void) {
  const acked: Acked[] = [];
  let gone = false;
  const senders = 32;
  const sender = async (k: number) => {
    for (let n = k; n < total && !gone; n += senders) {
      const body = JSON.stringify({ burst: n, note: 'kill -9 mid-burst', pad: 'y'.repeat(100 + (n % 500)) });
      const d = await signedDelivery(body);
      for (let attempt = 0; !gone; attempt++) {
        let res: Response;
        try {
          res = await fetch(`${url}/webhooks/codehost`, { method: 'POST', headers: d.headers, body: d.body });
        } catch {
          gone = true; // the service is gone: this delivery was never acknowledged
          return;
        }
        const text = await res.text().catch(() => undefined);
        if (text === undefined) {
          gone = true;
          return;
        }
        if (res.status === 202) {
          acked.push({ id: (JSON.parse(text) as { id: number }).id, body });
          onAck(acked.length);
          break;
        }
        if (attempt > 300) throw new Error(`delivery ${n} still refused: ${res.status} ${text}`);
        await sleep(100); // a 503 while the database is away: send it again, same delivery id
      }
    }
  };
  return { acked, done: Promise.all(Array.from({ length: senders }, (_, k) => sender(k))) };
}

async function expectEachAckOnce(h: Harness, acked: readonly Acked[]): Promise<void> {
  const bodies = new Map<string, number>();
  for await (const e of h.store.readStream('deliveries')) {
    const body = new TextDecoder().decode(e.data);
    bodies.set(body, (bodies.get(body) ?? 0) + 1);
  }
  const wrong = acked.filter((a) => bodies.get(a.body) !== 1);
  expect(
    wrong.map((a) => `${a.id}: ${bodies.get(a.body) ?? 0} times`),
    'acknowledged deliveries not in the log exactly once',
  ).toEqual([]);
}

describe('crash safety in embedded mode: 1,000 signed deliveries from 32 senders', () => {
  let dataDir: string | undefined;
  const started: ServerProcess[] = [];
  afterEach(async () => {
    await killAll(started);
    if (dataDir) await removeDataDir(dataDir);
    dataDir = undefined;
  });

  it('kill -9 of hookline at a random moment of the burst: after the restart every 202 is in the log once, the read models equal a rebuild', async () => {
    dataDir = await freshDataDir();
    const first = await startHookline(dataDir);
    started.push(first);
    await first.healthy();
    const killAt = 100 + Math.floor(Math.random() * 800);
    const load = burst(first.url, 1000, (n) => {
      if (n === killAt) first.kill('SIGKILL');
    });
    await load.done;
    expect((await first.exited).signal).toBe('SIGKILL');
    expect(load.acked.length).toBeGreaterThanOrEqual(killAt);

    const second = await startHookline(dataDir);
    started.push(second);
    await second.healthy();
    await untilCaughtUp(second.url);
    second.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);

    const h = await openLeftovers({ dataDir });
    try {
      await expectEachAckOnce(h, load.acked);
      await expectReadModelsEqualRebuild(h);
    } finally {
      await h.close();
    }
  }, 600_000);

  it('kill -9 of the postmaster at a random moment of the burst: hookline starts it again, every 202 is in the log once, the read models equal a rebuild', async () => {
    dataDir = await freshDataDir();
    const server = await startHookline(dataDir);
    started.push(server);
    await server.healthy();
    const postmaster = postmasterPid(dataDir)!;
    const killAt = 100 + Math.floor(Math.random() * 800);
    const load = burst(server.url, 1000, (n) => {
      if (n === killAt) process.kill(postmaster, 'SIGKILL');
    });
    await load.done;
    // Every delivery of the burst was acknowledged in the end: the senders' retries met the
    // server hookline started again.
    expect(load.acked.length).toBe(1000);
    expect(postmasterPid(dataDir)).not.toBe(postmaster);
    await untilCaughtUp(server.url);
    server.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);

    const h = await openLeftovers({ dataDir });
    try {
      await expectEachAckOnce(h, load.acked);
      await expectReadModelsEqualRebuild(h);
    } finally {
      await h.close();
    }
  }, 600_000);
});
