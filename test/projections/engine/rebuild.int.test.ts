import { setTimeout as sleep } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shadowSchemaFor } from '../../../projections/engine/rebuild.ts';
import { createProjectionRunner } from '../../../projections/engine/runner.ts';
import type { Projection, RebuildProgress } from '../../../projections/engine/types.ts';
import type { Database } from '../../../src/db/database.ts';
import { HooklineError } from '../../../src/errors.ts';
import { jsonEvent } from '../../../src/eventstore/codec.ts';
import type { RecordedEvent } from '../../../src/eventstore/port.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import {
  compareWithRebuild,
  type Harness,
  openHarness,
  testLogger,
  trackingProjection,
  waitUntil,
} from '../support.ts';

const hasPg = await postgresAvailable();
const fast = { batchMs: 20, retryMinMs: 20, retryMaxMs: 100, standbyRetryMs: 100, pollMs: 20 };

async function appendBatches(h: Harness, calls: number, perCall: number, prefix: string): Promise<string> {
  let last = '';
  for (let i = 0; i < calls; i++) {
    last = (
      await h.store.append(
        `${prefix}-${i % 5}`,
        Array.from({ length: perCall }, (_, j) => jsonEvent('Tested', { i, j })),
      )
    ).position;
  }
  return last;
}

const oidOf = async (db: Kysely<Database>, table: string) =>
  (await sql<{ oid: number }>`select ${`public.${table}`}::regclass::oid::int8 as oid`.execute(db)).rows[0]!
    .oid;

const schemaExists = async (db: Kysely<Database>, schema: string) =>
  (
    await sql<{
      n: number;
    }>`select count(*)::int as n from information_schema.schemata where schema_name = ${schema}`.execute(db)
  ).rows[0]!.n === 1;

/** Per stream: how many events and (from version 2 on) the type of the last one. */
function versioned(version: 1 | 2): Projection {
  // biome-ignore lint/suspicious/noExplicitAny: a test table the app's Database does not list
  const t = (db: Kysely<Database>) => db as Kysely<any>;
  return {
    name: 'versioned',
    version,
    tables: ['versioned_streams'],
    async createTables(db) {
      let b = t(db)
        .schema.createTable('versioned_streams')
        .ifNotExists()
        .addColumn('stream', 'text', (c) => c.primaryKey())
        .addColumn('n', 'integer', (c) => c.notNull());
      if (version === 2) b = b.addColumn('last_type', 'text', (c) => c.notNull());
      await b.execute();
    },
    async apply(db, events: readonly RecordedEvent[]) {
      for (const e of events) {
        const row =
          version === 2 ? { stream: e.streamId, n: 1, last_type: e.type } : { stream: e.streamId, n: 1 };
        await t(db)
          .insertInto('versioned_streams')
          .values(row)
          .onConflict((oc) =>
            oc.column('stream').doUpdateSet((eb) => ({
              n: sql`${eb.ref('versioned_streams.n')} + 1`,
              ...(version === 2 ? { last_type: eb.ref('excluded.last_type') } : {}),
            })),
          )
          .execute();
      }
    },
  };
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

  it('replays into a shadow schema while the old tables keep serving and ingestion flows, then swaps', async () => {
    const appendedBefore = await appendBatches(h, 100, 10, 'served');
    const projection = trackingProjection('a', { name: 'served' });
    const runner = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [projection],
      options: { ...fast, rebuildBatchSize: 50 },
    });
    await runner.start();
    try {
      await runner.waitFor(appendedBefore, { timeoutMs: 20_000 });
      const servedBefore = (
        await sql<{ n: number }>`select count(*)::int as n from served_applied`.execute(h.sql.db)
      ).rows[0]!.n;
      expect(servedBefore).toBeGreaterThanOrEqual(1000);
      const oidBefore = await oidOf(h.sql.db, 'served_applied');
      const shadow = shadowSchemaFor('served');

      let rebuilding = true;
      const reads: Array<{ rows: number; shadow: boolean }> = [];
      const reader = (async () => {
        while (rebuilding) {
          const rows = (
            await sql<{ n: number }>`select count(*)::int as n from served_applied`.execute(h.sql.db)
          ).rows[0]!.n;
          reads.push({ rows, shadow: await schemaExists(h.sql.db, shadow) });
          await sleep(1);
        }
      })();
      let appended = 0;
      const writer = (async () => {
        while (rebuilding) {
          await h.store.append(`served-during-${appended}`, [jsonEvent('Tested', { during: appended })]);
          appended++;
          await sleep(5);
        }
      })();

      const progress: RebuildProgress[] = [];
      await runner.rebuild('served', (p) => progress.push(p));
      rebuilding = false;
      await Promise.all([reader, writer]);

      // The old tables served every read, full, while the shadow existed; then they were replaced.
      expect(reads.filter((r) => r.shadow).length).toBeGreaterThan(0);
      expect(Math.min(...reads.map((r) => r.rows))).toBeGreaterThanOrEqual(servedBefore);
      expect(appended).toBeGreaterThan(0);
      expect(await oidOf(h.sql.db, 'served_applied')).not.toBe(oidBefore);
      expect(await schemaExists(h.sql.db, shadow)).toBe(false);

      // Progress: done/total, a rate, an ETA; monotonic; the last report is complete.
      const last = progress.at(-1)!;
      expect(progress[0]).toMatchObject({ name: 'served', done: 0 });
      expect(progress.some((p) => p.done > 0 && p.done < p.total && p.etaSeconds !== null)).toBe(true);
      expect(last.done).toBe(last.total);
      expect(last.total).toBeGreaterThanOrEqual(1000);
      expect(last.etaSeconds).toBe(0);
      expect(last.ratePerSecond).toBeGreaterThan(0);
      for (let i = 1; i < progress.length; i++)
        expect(progress[i]!.done).toBeGreaterThanOrEqual(progress[i - 1]!.done);

      // After the swap the live worker resumes from the new checkpoint: equal to a fresh rebuild.
      const compared = await compareWithRebuild(h, runner, projection);
      expect(compared.live).toEqual(compared.rebuilt);
      const [status] = await runner.status();
      expect(status).toMatchObject({ state: 'active' });
    } finally {
      await runner.stop();
    }
  });

  it('refuses a second rebuild of the same projection while one runs', async () => {
    const slow = trackingProjection('a', { name: 'slow', delayMs: 30 });
    const runner = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [slow],
      options: { ...fast, rebuildBatchSize: 100 },
    });
    const first = runner.rebuild('slow');
    const second = await runner.rebuild('slow').catch((e: unknown) => e);
    expect(second).toBeInstanceOf(HooklineError);
    expect((second as HooklineError).code).toBe('conflict');
    await first;
    await runner.stop();
    const unknown = await runner.rebuild('nope').catch((e: unknown) => e);
    expect((unknown as HooklineError).code).toBe('not_found');
  });

  it('rebuilds on start when the projection version changed, and waitFor waits for the new tables', async () => {
    const v1 = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [versioned(1)],
      options: fast,
    });
    await v1.start();
    await v1.waitFor(await h.store.committedPosition(), { timeoutMs: 20_000 });
    await v1.stop();

    const head = (await h.store.append('versioned-extra', [jsonEvent('Bumped', {})])).position;
    const v2 = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      projections: [versioned(2)],
      options: fast,
    });
    await v2.start();
    try {
      await v2.waitFor(head, { projection: 'versioned', timeoutMs: 30_000 });
      // The rebuild's bookkeeping ends just after the swap that waitFor saw.
      await waitUntil(async () => (await v2.status())[0]?.state === 'active', 'the worker to resume');
      const [status] = await v2.status();
      expect(status).toMatchObject({ version: 2, liveVersion: 2, state: 'active' });
      const row = (
        await sql<{
          n: number;
          last_type: string;
        }>`select n, last_type from versioned_streams where stream = 'versioned-extra'`.execute(h.sql.db)
      ).rows[0];
      expect(row).toEqual({ n: 1, last_type: 'Bumped' });
    } finally {
      await v2.stop();
    }
  });
}

describe('projection rebuild in embedded mode', () => suite('embedded'));
describe.runIf(hasPg)('projection rebuild on PostgreSQL', () => suite('postgres'));
