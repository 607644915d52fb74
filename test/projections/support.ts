import { setTimeout as sleep } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import { readCheckpoint } from '../../projections/engine/checkpoints.ts';
import { createLogCounter } from '../../projections/engine/lag.ts';
import { buildShadow, type RebuildDeps } from '../../projections/engine/rebuild.ts';
import type { Projection } from '../../projections/engine/types.ts';
import type { Database } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { openPostgres, type SqlDatabase } from '../../src/db/open.ts';
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { createLogger } from '../../src/logger.ts';
import { openEmbeddedTarget } from '../support/embedded.ts';

/** Silent unless HOOKLINE_TEST_LOG names a level (e.g. `debug`) for a failing run. */
export const testLogger = createLogger({
  logLevel: (process.env.HOOKLINE_TEST_LOG as 'debug' | undefined) ?? 'silent',
});

export interface Harness {
  readonly sql: SqlDatabase;
  readonly store: EventStore;
  close(): Promise<void>;
}

/** A migrated database and the SQL event store over it: embedded mode's server, or PostgreSQL at `url`. */
export async function openHarness(url?: string, options: { max?: number } = {}): Promise<Harness> {
  const sqlDb = url ? openPostgres(url, options) : await openEmbeddedTarget(options);
  await migrateToLatest(sqlDb.db);
  const store = await createSqlEventStore(sqlDb, { pollMs: 100 });
  return {
    sql: sqlDb,
    store,
    close: async () => {
      await store.close();
      await sqlDb.close();
    },
  };
}

export function rebuildDepsFor(h: Harness, batchSize = 100): RebuildDeps {
  return {
    sql: h.sql,
    store: h.store,
    counter: createLogCounter(h.store, h.sql),
    log: testLogger,
    batchSize,
    locks: undefined,
  };
}

// biome-ignore lint/suspicious/noExplicitAny: test projections own tables the app's Database does not list
type AnyDb = Kysely<any>;
const anyDb = (db: Kysely<Database>): AnyDb => db as AnyDb;

/**
 * A projection that records one row per applied event with the tag of the runner that applied it,
 * so a test sees a gap (missing position), a double apply (a position twice) and who wrote what.
 */
export function trackingProjection(
  tag: string,
  options: {
    name?: string;
    /** Slows each apply, so a test can act while a rebuild is under way. */
    delayMs?: number;
    version?: number;
    failFirst?: number;
    onApply?: (events: readonly RecordedEvent[]) => void;
  } = {},
): Projection & { failures: number } {
  const name = options.name ?? 'tracking';
  const table = `${name}_applied`;
  let failuresLeft = options.failFirst ?? 0;
  const self = {
    name,
    version: options.version ?? 1,
    tables: [table],
    failures: 0,
    async createTables(db: Kysely<Database>) {
      await anyDb(db)
        .schema.createTable(table)
        .ifNotExists()
        .addColumn('position', 'text', (c) => c.notNull())
        .addColumn('stream', 'text', (c) => c.notNull())
        .addColumn('runner', 'text', (c) => c.notNull())
        .execute();
    },
    async apply(db: Kysely<Database>, events: readonly RecordedEvent[]) {
      options.onApply?.(events);
      if (options.delayMs) await sleep(options.delayMs);
      await anyDb(db)
        .insertInto(table)
        .values(events.map((e) => ({ position: e.position, stream: e.streamId, runner: tag })))
        .execute();
      if (failuresLeft > 0) {
        failuresLeft--;
        self.failures++;
        throw new Error('injected apply failure');
      }
    },
  };
  return self;
}

/** Every row of a table as one JSON text, in a stable order: two tables compare equal as strings. */
export async function dumpTable(db: Kysely<Database>, schema: string, table: string): Promise<string> {
  const { rows } = await sql<{ rows: string }>`
    select coalesce(jsonb_agg(to_jsonb(t) order by to_jsonb(t)::text), '[]'::jsonb)::text as rows
    from ${sql.id(schema, table)} t`.execute(db);
  return rows[0]!.rows;
}

export async function waitUntil(
  check: () => Promise<boolean> | boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/**
 * Compares every table of `projection` with a fresh rebuild from the log into `schema`, once the
 * runner has applied exactly what the rebuild read. On a shared PostgreSQL cluster another
 * suite's open transaction can hold back what readers see (the xid8 rule), so the head may still
 * move while writers are quiet: the two sides are retaken until they stand at the same position.
 */
export async function compareWithRebuild(
  h: Harness,
  runner: { waitFor(position: string, options?: { projection?: string; timeoutMs?: number }): Promise<void> },
  projection: Projection,
  schema = `verify_${projection.name}`,
): Promise<{ live: Record<string, string>; rebuilt: Record<string, string>; position: string }> {
  for (let attempt = 1; ; attempt++) {
    const head = await h.store.headPosition();
    await runner.waitFor(head, { projection: projection.name, timeoutMs: 60_000 });
    const shadow = await buildShadow(rebuildDepsFor(h, 500), projection, { schema });
    const checkpoint = await readCheckpoint(h.sql.db, projection.name);
    if (shadow.position === head && checkpoint?.position === head) {
      const live: Record<string, string> = {};
      const rebuilt: Record<string, string> = {};
      for (const t of projection.tables) {
        live[t] = await dumpTable(h.sql.db, 'public', t);
        rebuilt[t] = await dumpTable(h.sql.db, schema, t);
      }
      await sql`drop schema ${sql.id(schema)} cascade`.execute(h.sql.db);
      if ((await readCheckpoint(h.sql.db, projection.name))?.position === head)
        return { live, rebuilt, position: head };
    }
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(h.sql.db);
    if (attempt >= 20)
      throw new Error(`the log kept moving while comparing ${projection.name} with a rebuild`);
    await sleep(200);
  }
}

/** Waits until readers of the log see `position` (a shared cluster may hold visibility back). */
export async function waitVisible(h: Harness, position: string): Promise<void> {
  await waitUntil(
    async () => h.store.comparePositions(await h.store.headPosition(), position) >= 0,
    `position ${position} to become visible`,
    60_000,
  );
}
