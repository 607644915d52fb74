import { setTimeout as sleep } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildShadow, PARALLEL_APPLIES } from '../../../projections/engine/rebuild.ts';
import type { Projection } from '../../../projections/engine/types.ts';
import type { Database } from '../../../src/db/database.ts';
import { jsonEvent } from '../../../src/eventstore/codec.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import { type Harness, openHarness, rebuildDepsFor } from '../support.ts';

const hasPg = await postgresAvailable();

// biome-ignore lint/suspicious/noExplicitAny: a test table the app's Database does not list
const anyDb = (db: Kysely<Database>) => db as Kysely<any>;

interface Span {
  readonly first: number;
  readonly barrier: boolean;
  readonly start: number;
  end: number;
}

/**
 * Inserts commute; a `Count` event stores how many rows exist when it is applied, which is only
 * right when every earlier batch has committed and no later one has. Each apply takes a while,
 * so batches that may run side by side do.
 */
function lanedProjection(spans: Span[]): Projection {
  let clock = 0;
  return {
    name: 'laned',
    version: 1,
    tables: ['laned_rows', 'laned_counts'],
    async createTables(db) {
      await anyDb(db)
        .schema.createTable('laned_rows')
        .ifNotExists()
        .addColumn('n', 'integer', (c) => c.primaryKey())
        .execute();
      await anyDb(db)
        .schema.createTable('laned_counts')
        .ifNotExists()
        .addColumn('at', 'integer', (c) => c.primaryKey())
        .addColumn('seen', 'integer', (c) => c.notNull())
        .execute();
    },
    commutes: (e) => e.type === 'Inserted',
    async apply(db, events) {
      const first = (JSON.parse(Buffer.from(events[0]!.data).toString()) as { n: number }).n;
      const span: Span = {
        first,
        barrier: events.some((e) => e.type !== 'Inserted'),
        start: ++clock,
        end: 0,
      };
      spans.push(span);
      for (const e of events) {
        const { n } = JSON.parse(Buffer.from(e.data).toString()) as { n: number };
        if (e.type === 'Inserted') {
          await anyDb(db).insertInto('laned_rows').values({ n }).execute();
        } else {
          const { rows } = await sql<{ c: number }>`select count(*)::int as c from laned_rows`.execute(db);
          await anyDb(db).insertInto('laned_counts').values({ at: n, seen: rows[0]!.c }).execute();
        }
      }
      await sleep(5 + (first % 3) * 10);
      span.end = ++clock;
    },
  };
}

function suite(kind: 'embedded' | 'postgres') {
  let testDb: TestDatabase | undefined;
  let h: Harness;

  beforeAll(async () => {
    if (kind === 'postgres') testDb = await createTestDatabase('replay_lanes');
    h = await openHarness(testDb?.url);
    // 0..59 inserted, a count at 60, 61..99 inserted, a count at 100, then 101..129 inserted.
    let n = 0;
    for (const stop of [60, 100, 130]) {
      while (n < stop) {
        const events = [];
        for (let i = 0; i < 7 && n < stop; i++) events.push(jsonEvent('Inserted', { n: n++ }));
        await h.store.append('laned', events);
      }
      if (stop < 130) await h.store.append('laned', [jsonEvent('Counted', { n: n++ })]);
    }
  });

  afterAll(async () => {
    await h?.close();
    await testDb?.drop();
  });

  it('applies commuting batches side by side and every other batch alone, in log order', async () => {
    const spans: Span[] = [];
    const { schema } = await buildShadow(rebuildDepsFor(h, 10), lanedProjection(spans), {
      schema: `hookline_test_lanes_${kind}`,
    });
    const scoped = h.sql.db.withSchema(schema);
    const rows = await anyDb(scoped)
      .selectFrom('laned_rows')
      .select((eb) => eb.fn.countAll().as('c'))
      .execute();
    expect(Number(rows[0]!.c)).toBe(128);
    // Each count saw exactly the rows inserted before it in the log, none after.
    const counts = await anyDb(scoped).selectFrom('laned_counts').selectAll().orderBy('at').execute();
    expect(counts).toEqual([
      { at: 60, seen: 60 },
      { at: 100, seen: 99 },
    ]);
    expect(spans).toHaveLength(13); // 130 events in batches of 10
    const barriers = spans.filter((s) => s.barrier);
    expect(barriers).toHaveLength(2);
    for (const b of barriers) {
      for (const other of spans) {
        if (other === b) continue;
        if (other.first < b.first) expect(other.end).toBeLessThan(b.start);
        else expect(other.start).toBeGreaterThan(b.end);
      }
    }
    const concurrency = Math.max(
      ...spans.map((s) => spans.filter((o) => o.start <= s.start && o.end > s.start).length),
    );
    expect(concurrency).toBe(PARALLEL_APPLIES);
    await sql`drop schema ${sql.id(schema)} cascade`.execute(h.sql.db);
  });

  it('ends with the error of a batch that fails, after the batches beside it', async () => {
    const spans: Span[] = [];
    const failing: Projection = {
      ...lanedProjection(spans),
      async apply(db, events) {
        const first = (JSON.parse(Buffer.from(events[0]!.data).toString()) as { n: number }).n;
        if (first === 30) throw new Error('batch 30 refused');
        return lanedProjection(spans).apply(db, events);
      },
    };
    const schema = `hookline_test_lanes_fail_${kind}`;
    await expect(buildShadow(rebuildDepsFor(h, 10), failing, { schema })).rejects.toThrow('batch 30 refused');
    await sql`drop schema ${sql.id(schema)} cascade`.execute(h.sql.db);
  });
}

describe('rebuild lanes in embedded mode', () => suite('embedded'));
describe.runIf(hasPg)('rebuild lanes on PostgreSQL', () => suite('postgres'));
