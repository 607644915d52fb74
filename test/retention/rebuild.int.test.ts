import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logRetainedFrom } from '../../projections/log.queries.ts';
import { RETENTION_STREAM } from '../../src/domain/retention/events.ts';
import type { RecordedEvent } from '../../src/eventstore/port.ts';
import { createRetentionJob } from '../../src/retention/job.ts';
import type { Runtime } from '../../src/runtime.ts';
import { changeSettings } from '../../src/settings/change.ts';
import { seedDeliveries } from '../http/ui/seed.ts';
import { startTestServer, type TestServer } from '../http/ui/support.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

const hasPg = await postgresAvailable();

async function collect(it: AsyncIterable<RecordedEvent>): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for await (const e of it) out.push(e);
  return out;
}

/** Every column of every row, in id order: "the same rows" means exactly that. */
async function logRows(runtime: Pick<Runtime, 'db'>) {
  const rows = await runtime.db.selectFrom('log_events').selectAll().orderBy('id').execute();
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

const settle = async (runtime: Pick<Runtime, 'store' | 'projections'>) =>
  runtime.projections.waitFor(await runtime.store.committedPosition(), { timeoutMs: 20_000 });

function suite(name: string, usePg: boolean) {
  describe.runIf(!usePg || hasPg)(name, () => {
    let db: TestDatabase | undefined;
    let s: TestServer;
    /** The deliveries as they were recorded, before any prune: what a store that never scavenges holds. */
    let unscavenged: RecordedEvent[] = [];

    const prune = () =>
      createRetentionJob(
        {
          store: s.runtime.store,
          db: s.runtime.db,
          sql: s.runtime.sql,
          clock: s.runtime.clock,
          logger: s.runtime.logger,
        },
        { batchSize: 4 },
      ).runOnce();
    const ingest = async (n: number) => {
      await seedDeliveries(
        s.runtime,
        Array.from({ length: n }, (_, i) => ({ payload: JSON.stringify({ i }), event_type: `t${i % 3}` })),
      );
      unscavenged = await collect(s.runtime.store.readStream('deliveries', { fromRevision: 0n }));
    };

    beforeAll(async () => {
      db = usePg ? await createTestDatabase() : undefined;
      s = await startTestServer(db ? { databaseUrl: db.url } : {});
      const changed = await changeSettings(
        { store: s.runtime.store, clock: s.runtime.clock },
        { type: 'ChangeSettings', values: { retention_max_rows: 10 }, actor: null },
      );
      await s.runtime.projections.waitFor(changed.position!, { timeoutMs: 10_000 });
    });

    afterAll(async () => {
      await s?.close();
      await db?.drop();
    });

    it('rebuilds the log to exactly the pruned rows, prune after prune', async () => {
      const all: RecordedEvent[] = [];
      for (const n of [30, 7]) {
        await ingest(n);
        all.push(...unscavenged.filter((e) => !all.some((a) => a.id === e.id)));
        const ran = await prune();
        unscavenged = [...all];
        const total = all.length;
        expect(ran).toMatchObject({ max_rows: 10, log_before_id: total - 9 });
        await settle(s.runtime);
        const live = await logRows(s.runtime);
        expect(live.map((r) => r.id)).toEqual(Array.from({ length: 10 }, (_, i) => total - 9 + i));
        expect(await logRetainedFrom(s.runtime.db)).toBe(total - 9);

        await s.runtime.projections.rebuild('log');
        expect(await logRows(s.runtime)).toEqual(live);
        expect(await logRetainedFrom(s.runtime.db)).toBe(total - 9);
      }
    });

    it('gives the same rows from a store that has not scavenged the pruned deliveries', async () => {
      // What EventStoreDB holds between a truncation and its scavenge: every delivery ever
      // recorded, then the prune records. A second instance replays exactly that.
      const other = await startTestServer();
      try {
        await other.runtime.store.append(
          'deliveries',
          unscavenged.map((e) => ({
            id: e.id,
            type: e.type,
            data: e.data,
            contentType: e.contentType,
            ...(e.metadata ? { metadata: e.metadata } : {}),
          })),
        );
        const runs = await collect(s.runtime.store.readStream(RETENTION_STREAM));
        expect(runs.length).toBeGreaterThan(0);
        await other.runtime.store.append(
          RETENTION_STREAM,
          runs.map((e) => ({ id: e.id, type: e.type, data: e.data, contentType: e.contentType })),
        );
        await settle(other.runtime);
        const live = await logRows(s.runtime);
        const replayed = await logRows(other.runtime);
        // The position differs (another store); every other column is the same.
        const strip = (rows: typeof live) => rows.map(({ position: _position, ...rest }) => rest);
        expect(strip(replayed)).toEqual(strip(live));
        await other.runtime.projections.rebuild('log');
        expect(strip(await logRows(other.runtime))).toEqual(strip(live));
      } finally {
        await other.close();
      }
    });
  });
}

suite('retention and a log rebuild in embedded mode', false);
suite('retention and a log rebuild on PostgreSQL', true);
