import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertCheckpoint, readCheckpoint } from '../../../projections/engine/checkpoints.ts';
import {
  createLazyCheckpoints,
  type LazyMove,
  type LazyOutcome,
} from '../../../projections/engine/lazy-checkpoints.ts';
import { createProjectionRunner } from '../../../projections/engine/runner.ts';
import { jsonEvent } from '../../../src/eventstore/codec.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import { type Harness, openHarness, testLogger, trackingProjection, waitUntil } from '../support.ts';

const hasPg = await postgresAvailable();

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

  it('writes every pending move in one flush, each compare-and-set on its own', async () => {
    await insertCheckpoint(h.sql.db, 'lazy_kept', 1);
    await insertCheckpoint(h.sql.db, 'lazy_stale', 1);
    await insertCheckpoint(h.sql.db, 'lazy_dropped', 1);
    const to = (await h.store.append('lazy-1', [jsonEvent('Tested', {})])).position;
    const lazy = createLazyCheckpoints(h.sql.db, 10, testLogger);
    const outcomes = new Map<string, LazyOutcome>();
    const put = (name: string, move: LazyMove) => {
      let done!: () => void;
      const settled = new Promise<void>((resolve) => {
        done = resolve;
      });
      lazy.put(name, {
        pending: () => move,
        done: (outcome) => {
          outcomes.set(name, outcome);
          done();
        },
      });
      return settled;
    };
    try {
      const kept = put('lazy_kept', { version: 1, from: 'start', to });
      // Its writer believes the row is somewhere it is not: another writer moved it.
      const stale = put('lazy_stale', { version: 1, from: to, to });
      void put('lazy_dropped', { version: 1, from: 'start', to });
      // Settled before the flush (its writer is about to write the row itself): never sent.
      await lazy.settle('lazy_dropped');
      await Promise.all([kept, stale]);
    } finally {
      lazy.close();
    }
    expect(Object.fromEntries(outcomes)).toEqual({ lazy_kept: 'written', lazy_stale: 'moved' });
    expect((await readCheckpoint(h.sql.db, 'lazy_kept'))!.position).toBe(to);
    expect((await readCheckpoint(h.sql.db, 'lazy_stale'))!.position).toBe('start');
    expect((await readCheckpoint(h.sql.db, 'lazy_dropped'))!.position).toBe('start');
  });

  it('moves the rows of every projection that ignores the events while the runner runs', async () => {
    const ignoring = (name: string) => ({
      ...trackingProjection('a', { name }),
      handles: () => false,
    });
    const runner = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [
        ignoring('ignores_one'),
        ignoring('ignores_two'),
        trackingProjection('a', { name: 'takes' }),
      ],
      options: { batchMs: 20, retryMinMs: 20, retryMaxMs: 100, checkpointEveryMs: 20 },
    });
    await runner.start();
    try {
      let last = '';
      for (let i = 0; i < 5; i++)
        last = (await h.store.append(`lazy-run-${i}`, [jsonEvent('Tested', { i })])).position;
      await runner.waitFor(last, { timeoutMs: 20_000 });
      // Written while running, not only on stop.
      await waitUntil(async () => {
        const rows = await Promise.all(
          ['ignores_one', 'ignores_two', 'takes'].map((n) => readCheckpoint(h.sql.db, n)),
        );
        return rows.every((r) => r !== undefined && h.store.comparePositions(r.position, last) >= 0);
      }, 'the lazily kept checkpoints');
    } finally {
      await runner.stop();
    }
  });
}

describe('lazy checkpoints in embedded mode', () => suite('embedded'));
describe.runIf(hasPg)('lazy checkpoints on PostgreSQL', () => suite('postgres'));
