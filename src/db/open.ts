import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite, type PGliteOptions, types } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import { CopyingClient, withBinaryCopy } from './copy.ts';
import type { Database } from './database.ts';

// int8 (bigint) columns come back as strings by default; revisions and positions need exact values.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => BigInt(v));

export type SqlKind = 'pglite' | 'postgres';

/** A handle on the SQL database that holds the read models (and, outside scale-out, the event log). */
export interface SqlDatabase {
  readonly kind: SqlKind;
  readonly db: Kysely<Database>;
  /** Present in server and scale-out modes: the pool, for LISTEN/NOTIFY and advisory locks. */
  readonly pool: pg.Pool | undefined;
  /** Present in embedded mode. */
  readonly pglite: PGlite | undefined;
  close(): Promise<void>;
}

/**
 * bytea through Buffer's hex codec: PGlite's own turns each byte into a string of its own, about
 * 135 µs for a 1.5 KB payload going in (the log's every row), against about 2 µs here.
 */
const byteaCodecs: Pick<PGliteOptions, 'parsers' | 'serializers'> = {
  serializers: {
    [types.BYTEA]: (value: unknown) => {
      if (!(value instanceof Uint8Array)) throw new TypeError('a bytea parameter takes a Uint8Array');
      return `\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}`;
    },
  },
  parsers: { [types.BYTEA]: (value: string) => Buffer.from(value.slice(2), 'hex') },
};

export async function openPglite(dataDir: string | undefined): Promise<SqlDatabase> {
  let pglite: PGlite;
  if (dataDir) {
    const dir = path.join(dataDir, 'pglite');
    await mkdir(dir, { recursive: true });
    pglite = await PGlite.create(dir, byteaCodecs);
  } else {
    pglite = await PGlite.create(byteaCodecs); // in memory, for tests
  }
  const db = new Kysely<Database>({ dialect: new PGliteDialect(withBinaryCopy(pglite)) });
  return {
    kind: 'pglite',
    db,
    pool: undefined,
    pglite,
    close: async () => {
      await db.destroy(); // the dialect closes PGlite
    },
  };
}

export function openPostgres(connectionString: string, options: { max?: number } = {}): SqlDatabase {
  const pool = new pg.Pool({
    Client: CopyingClient, // COPY FROM STDIN through Kysely (copy.ts)
    connectionString,
    max: options.max ?? 16,
    // Long transactions stall the xid8 reader for everyone (design.md, PostgreSQL hygiene).
    idle_in_transaction_session_timeout: 30_000,
    application_name: 'hookline',
  });
  // An idle client's error (server restart) must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kind: 'postgres',
    db,
    pool,
    pglite: undefined,
    close: async () => {
      await db.destroy();
    },
  };
}
