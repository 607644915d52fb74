import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  advanceCheckpoint,
  CheckpointMovedError,
  readCheckpoint,
} from '../../../projections/engine/checkpoints.ts';
import { createProjectionRunner } from '../../../projections/engine/runner.ts';
import { fixedClock } from '../../../src/clock.ts';
import { HooklineError } from '../../../src/errors.ts';
import { jsonEvent } from '../../../src/eventstore/codec.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import { type Harness, openHarness, testLogger, trackingProjection, waitVisible } from '../support.ts';

const hasPg = await postgresAvailable();

const fast = { batchMs: 20, retryMinMs: 20, retryMaxMs: 100, standbyRetryMs: 100, pollMs: 20 };

async function appendMany(h: Harness, n: number, prefix: string) {
  let last = '';
  for (let i = 0; i < n; i++) {
    last = (await h.store.append(`${prefix}-${i % 7}`, [jsonEvent('Tested', { i })])).position;
  }
  return last;
}

async function appliedRows(h: Harness, table: string) {
  const { rows } = await sql<{ n: number; distinct: number }>`
    select count(*)::int as n, count(distinct position)::int as distinct from ${sql.table(table)}`.execute(
    h.sql.db,
  );
  return rows[0]!;
}

function suite(kind: 'embedded' | 'postgres') {
  let testDb: TestDatabase | undefined;
  let h: Harness;

  beforeAll(async () => {
    if (kind === 'postgres') testDb = await createTestDatabase();
    h = await openHarness(testDb?.url);
  });
  afterAll(async () => {
    await h?.close();
    await testDb?.drop();
  });

  it('applies the log from the start, then live, and waitFor resolves once the write is applied', async () => {
    const last = await appendMany(h, 300, 'first');
    const projection = trackingProjection('a', { name: 'first' });
    const runner = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [projection],
      options: fast,
    });
    await runner.start();
    try {
      await runner.waitFor(last, { timeoutMs: 20_000 });
      expect(await appliedRows(h, 'first_applied')).toEqual({ n: 300, distinct: 300 });

      // Live: concurrent appends while the worker follows $all.
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => h.store.append(`first-live-${i}`, [jsonEvent('Tested', { i })])),
      );
      const newest = results
        .map((r) => r.position)
        .sort(h.store.comparePositions)
        .at(-1)!;
      await runner.waitFor(newest, { projection: 'first', timeoutMs: 20_000 });
      expect(await appliedRows(h, 'first_applied')).toEqual({ n: 340, distinct: 340 });

      const [status] = await runner.status();
      expect(status).toMatchObject({
        name: 'first',
        state: 'active',
        lagEvents: 0,
        lagSeconds: 0,
        liveVersion: 1,
      });
      expect(h.store.comparePositions(status!.position, newest)).toBeGreaterThanOrEqual(0);
    } finally {
      await runner.stop();
    }
  });

  it('reports lag in events and in seconds from the oldest unapplied event', async () => {
    const projection = trackingProjection('a', { name: 'lagging' });
    const runner = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [projection],
      options: fast,
    });
    await runner.start();
    await runner.waitFor(await h.store.committedPosition(), { timeoutMs: 20_000 });
    await runner.stop();
    const checkpoint = (await readCheckpoint(h.sql.db, 'lagging'))!;
    await waitVisible(h, await appendMany(h, 25, 'lag'));
    let oldest: Date | undefined;
    for await (const e of h.store.readAll({ after: checkpoint.position, maxCount: 1 })) oldest = e.createdAt;

    const clock = fixedClock(new Date(oldest!.getTime() + 90_000));
    const observer = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [projection],
      clock,
    });
    const [status] = await observer.status();
    expect(status).toMatchObject({ name: 'lagging', lagEvents: 25, lagSeconds: 90, state: 'stopped' });
    expect(status!.position).toBe(checkpoint.position);
  });

  it('bounds waitFor: a timeout rejects as unavailable, an unknown projection as not_found', async () => {
    const projection = trackingProjection('a', { name: 'idle' });
    const runner = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [projection],
      options: fast,
    });
    const head = await h.store.headPosition();
    const timedOut = await runner.waitFor(head, { timeoutMs: 100 }).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(HooklineError);
    expect((timedOut as HooklineError).code).toBe('unavailable');
    expect((timedOut as HooklineError).extensions).toMatchObject({ projections: ['idle'], position: head });
    const unknown = await runner.waitFor(head, { projection: 'nope' }).catch((e: unknown) => e);
    expect((unknown as HooklineError).code).toBe('not_found');
    await runner.waitFor('start', { timeoutMs: 1 });
  });

  it('retries a failing batch, the same batch, and never skips it', async () => {
    const projection = trackingProjection('a', { name: 'flaky', failFirst: 3 });
    const runner = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [projection],
      options: fast,
    });
    await runner.start();
    try {
      await runner.waitFor(await h.store.committedPosition(), { timeoutMs: 20_000 });
    } finally {
      await runner.stop();
    }
    expect(projection.failures).toBe(3);
    // Every event up to the checkpoint applied exactly once.
    const checkpoint = (await readCheckpoint(h.sql.db, 'flaky'))!;
    let total = 0;
    for await (const e of h.store.readAll())
      if (h.store.comparePositions(e.position, checkpoint.position) <= 0) total++;
    expect(total).toBeGreaterThan(0);
    expect(await appliedRows(h, 'flaky_applied')).toEqual({ n: total, distinct: total });
  });

  it('follows one shared feed; a writer that falls behind reads, rejoins and applies everything once', async () => {
    const quick = trackingProjection('a', { name: 'quick' });
    const slow = trackingProjection('a', { name: 'laggard', delayMs: 15 });
    const runner = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [quick, slow],
      options: { ...fast, batchSize: 10, maxBuffered: 20 },
    });
    await runner.start();
    try {
      await runner.waitFor(await h.store.committedPosition(), { timeoutMs: 30_000 });
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => h.store.append(`feed-${i % 9}`, [jsonEvent('Tested', { i })])),
      );
      const newest = results
        .map((r) => r.position)
        .sort(h.store.comparePositions)
        .at(-1)!;
      await runner.waitFor(newest, { timeoutMs: 60_000 });
      expect((await appliedRows(h, 'laggard_applied')).n).toBeGreaterThan(0);
    } finally {
      await runner.stop();
    }
    for (const name of ['quick', 'laggard']) {
      const checkpoint = (await readCheckpoint(h.sql.db, name))!;
      let total = 0;
      for await (const e of h.store.readAll())
        if (h.store.comparePositions(e.position, checkpoint.position) <= 0) total++;
      expect(await appliedRows(h, `${name}_applied`), name).toEqual({ n: total, distinct: total });
    }
  });

  it('moves the checkpoint of a projection that ignores the events lazily, and writes it on stop', async () => {
    const ignoring = { ...trackingProjection('a', { name: 'ignoring' }), handles: () => false };
    const runner = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [ignoring],
      options: { ...fast, checkpointEveryMs: 60_000 },
    });
    await runner.start();
    let last = '';
    try {
      await runner.waitFor(await h.store.committedPosition(), { timeoutMs: 20_000 });
      last = await appendMany(h, 5, 'ignored');
      await runner.waitFor(last, { timeoutMs: 20_000 });
      const [status] = await runner.status();
      expect(status).toMatchObject({ position: last, lagEvents: 0 });
      // The row lags behind this process's position until the interval or the stop.
      expect(
        h.store.comparePositions((await readCheckpoint(h.sql.db, 'ignoring'))!.position, last),
      ).toBeLessThan(0);
    } finally {
      await runner.stop();
    }
    expect((await readCheckpoint(h.sql.db, 'ignoring'))!.position).toBe(last);
    expect((await appliedRows(h, 'ignoring_applied')).n).toBe(0);
  });

  it('moves a checkpoint only compare-and-set: a stale writer cannot move it, and its rows roll back', async () => {
    const projection = trackingProjection('a', { name: 'cas' });
    const runner = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [projection],
      options: fast,
    });
    await runner.start();
    await runner.waitFor(await h.store.committedPosition(), { timeoutMs: 20_000 });
    await runner.stop();
    const before = (await readCheckpoint(h.sql.db, 'cas'))!;
    const rowsBefore = await appliedRows(h, 'cas_applied');

    // A writer that still believes the checkpoint is at 'start' (it lost its lock long ago).
    const stale = h.sql.db.transaction().execute(async (trx) => {
      await sql`insert into cas_applied (position, stream, runner) values ('x', 'x', 'stale')`.execute(trx);
      await advanceCheckpoint(trx, { name: 'cas', version: 1, from: 'start', to: '1:1' });
    });
    await expect(stale).rejects.toBeInstanceOf(CheckpointMovedError);
    // The right position but another version (a rebuild swapped in newer tables).
    await expect(
      h.sql.db
        .transaction()
        .execute((trx) =>
          advanceCheckpoint(trx, { name: 'cas', version: 2, from: before.position, to: before.position }),
        ),
    ).rejects.toBeInstanceOf(CheckpointMovedError);

    expect(await readCheckpoint(h.sql.db, 'cas')).toMatchObject({ position: before.position, version: 1 });
    expect(await appliedRows(h, 'cas_applied')).toEqual(rowsBefore);
  });

  it.runIf(kind === 'postgres')(
    'serialises two writers on the checkpoint row: the second finds it moved',
    async () => {
      const cp = (await readCheckpoint(h.sql.db, 'cas'))!;
      const first = Promise.withResolvers<void>();
      const release = Promise.withResolvers<void>();
      const a = h.sql.db.transaction().execute(async (trx) => {
        await advanceCheckpoint(trx, { name: 'cas', version: 1, from: cp.position, to: `${cp.position}9` });
        first.resolve();
        await release.promise;
      });
      await first.promise;
      const b = h.sql.db
        .transaction()
        .execute((trx) => advanceCheckpoint(trx, { name: 'cas', version: 1, from: cp.position, to: '1:1' }));
      const bSettled = b.then(
        () => 'committed',
        (e: unknown) => e,
      );
      release.resolve();
      await a;
      expect(await bSettled).toBeInstanceOf(CheckpointMovedError);
      expect((await readCheckpoint(h.sql.db, 'cas'))!.position).toBe(`${cp.position}9`);
    },
  );
}

describe('projection runner in embedded mode', () => suite('embedded'));
describe.runIf(hasPg)('projection runner on PostgreSQL', () => suite('postgres'));
