import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCheckpoint } from '../../../projections/engine/checkpoints.ts';
import { writerLockKey } from '../../../projections/engine/lock.ts';
import { createProjectionRunner } from '../../../projections/engine/runner.ts';
import type { ProjectionRunner } from '../../../projections/engine/types.ts';
import { jsonEvent } from '../../../src/eventstore/codec.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import { type Harness, openHarness, testLogger, trackingProjection, waitUntil } from '../support.ts';

const hasPg = await postgresAvailable();
const fast = { batchMs: 20, batchSize: 50, retryMinMs: 20, retryMaxMs: 200, standbyRetryMs: 100, pollMs: 20 };

const stateOf = async (runner: ProjectionRunner) => (await runner.status())[0]!.state;

/** Rows per runner tag, and whether every event up to the checkpoint was applied exactly once. */
async function audit(h: Harness) {
  const checkpoint = (await readCheckpoint(h.sql.db, 'shared'))!;
  let events = 0;
  for await (const e of h.store.readAll())
    if (h.store.comparePositions(e.position, checkpoint.position) <= 0) events++;
  const { rows } = await sql<{ n: number; distinct: number; by_a: number; by_b: number }>`
    select count(*)::int as n, count(distinct position)::int as distinct,
      count(*) filter (where runner = 'A')::int as by_a, count(*) filter (where runner = 'B')::int as by_b
    from shared_applied`.execute(h.sql.db);
  return { events, ...rows[0]! };
}

/**
 * Two harnesses on one database, each with its own pool and store (two processes' worth of
 * connections). `url` given: a PostgreSQL server's; else a database of its own on the worker's
 * embedded server, the second harness connecting to the first's.
 */
async function twoHarnesses(url: string | undefined): Promise<[Harness, Harness]> {
  const first = await openHarness(url, { max: 6 });
  return [first, await openHarness(url ?? first.sql.url, { max: 6 })];
}

interface Target {
  /** A PostgreSQL database's URL; undefined for a database of its own on the embedded server. */
  readonly url: string | undefined;
  drop(): Promise<void>;
}

function standby(mode: string, open: () => Promise<Target>) {
  describe(`standby writers (${mode})`, () => {
    let target: Target;
    let a: Harness;
    let b: Harness;
    let runnerA: ProjectionRunner;
    let runnerB: ProjectionRunner;

    beforeAll(async () => {
      target = await open();
      [a, b] = await twoHarnesses(target.url);
      runnerA = createProjectionRunner({
        sql: a.sql,
        store: a.store,
        logger: testLogger,
        projections: [trackingProjection('A', { name: 'shared' })],
        options: fast,
      });
      runnerB = createProjectionRunner({
        sql: b.sql,
        store: b.store,
        logger: testLogger,
        projections: [trackingProjection('B', { name: 'shared' })],
        options: fast,
      });
    });
    afterAll(async () => {
      await runnerA?.stop();
      await runnerB?.stop();
      await b?.close();
      await a?.close(); // embedded: drops the database
      await target?.drop();
    });
    it('one writes, the other stands by; the standby takes over when the lock connection dies, with no gap and no double apply', async () => {
      await runnerA.start();
      await runnerB.start();
      expect(await stateOf(runnerA)).toBe('active');
      expect(await stateOf(runnerB)).toBe('standby');

      let appending = true;
      let appended = 0;
      const appender = (async () => {
        while (appending) {
          await a.store.append(`load-${appended % 11}`, [jsonEvent('Loaded', { n: appended })]);
          appended++;
        }
      })();
      try {
        await waitUntil(async () => (await audit(a)).by_a >= 100, 'A to apply under load');

        // Kill the connection that holds A's writer lock, as a crashed or partitioned process would.
        const key = writerLockKey('shared');
        const { rows } = await sql<{ killed: boolean }>`
          select pg_terminate_backend(pid) as killed from pg_locks
          where locktype = 'advisory' and granted and classid = ${key.classId}::int8::oid and objid = ${key.objectId}::int8::oid
            and database = (select oid from pg_database where datname = current_database())`.execute(
          b.sql.db,
        );
        expect(rows).toEqual([{ killed: true }]);

        await waitUntil(async () => (await stateOf(runnerB)) === 'active', 'B to take over');
        expect(await stateOf(runnerA)).toBe('standby');
        await waitUntil(async () => (await audit(a)).by_b >= 100, 'B to apply under load');

        // Then B stops cleanly, and A takes the projection back.
        await runnerB.stop();
        await waitUntil(async () => (await stateOf(runnerA)) === 'active', 'A to take over again');
        const byABefore = (await audit(a)).by_a;
        await waitUntil(async () => (await audit(a)).by_a >= byABefore + 100, 'A to apply again');
      } finally {
        appending = false;
        await appender;
      }
      await runnerA.waitFor(await a.store.committedPosition(), { timeoutMs: 30_000 });
      await runnerA.stop();

      const result = await audit(a);
      expect(result.events).toBeGreaterThan(300);
      expect(result.n).toBe(result.events); // no gap
      expect(result.distinct).toBe(result.n); // no double apply
      expect(result.by_a).toBeGreaterThan(0);
      expect(result.by_b).toBeGreaterThan(0);
    });
  });
}

standby('embedded', async () => ({ url: undefined, drop: async () => {} }));

describe.runIf(hasPg)('on PostgreSQL', () => {
  standby('PostgreSQL', async () => {
    const db: TestDatabase = await createTestDatabase();
    return { url: db.url, drop: () => db.drop() };
  });
});
