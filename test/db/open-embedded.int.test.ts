import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openEmbedded } from '../../src/db/open.ts';
import { embeddedTarget, freshDataDir, removeDataDir } from '../support/embedded.ts';

/**
 * openEmbedded on an initialised cluster opens no administrative connection: the pool's first
 * connection tells whether the database exists (db/open.ts). These run on the worker slot's managed
 * server (test/support/embedded.ts), adopted as a second hookline would adopt it.
 */
describe('openEmbedded on a running managed server', () => {
  /** The server's databases, seen through a connection to `url`. */
  async function databases(url: string): Promise<string[]> {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const { rows } = await c.query<{ datname: string }>('select datname from pg_database');
      return rows.map((r) => r.datname);
    } finally {
      await c.end();
    }
  }

  it('creates a database that is missing (the first connection is refused with 3D000), then serves from it', async () => {
    const target = await embeddedTarget(); // the slot's server, with a database to look from
    const missing = `t_missing_${randomBytes(4).toString('hex')}`;
    const lookout = await openEmbedded(target.env.HOOKLINE_DATA_DIR, { database: target.database });
    try {
      expect(await databases(lookout.url)).not.toContain(missing);
      const sql = await openEmbedded(target.env.HOOKLINE_DATA_DIR, { database: missing });
      try {
        const { rows } = await sql.pool.query<{ db: string }>('select current_database() as db');
        expect(rows[0]!.db).toBe(missing);
        expect(await databases(lookout.url)).toContain(missing);
      } finally {
        await sql.close();
      }
      // Opening it again finds it: no second create, nothing refused.
      const again = await openEmbedded(target.env.HOOKLINE_DATA_DIR, { database: missing });
      await again.close();
      const admin = new pg.Client({ connectionString: lookout.url });
      await admin.connect();
      await admin.query(`drop database ${admin.escapeIdentifier(missing)} with (force)`);
      await admin.end();
    } finally {
      await lookout.close();
      await target.drop();
    }
  });

  it('opens an existing database with the pool connection alone: no administrative connection', async () => {
    const target = await embeddedTarget();
    const sql = await openEmbedded(target.env.HOOKLINE_DATA_DIR, { database: target.database });
    try {
      // The first connection stays in the pool for the start's first queries.
      expect(sql.pool.totalCount).toBe(1);
      expect(sql.pool.idleCount).toBe(1);
      const { rows } = await sql.pool.query<{ n: number }>(
        "select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'hookline'",
      );
      expect(rows[0]!.n).toBe(1);
    } finally {
      await sql.close();
      await target.drop();
    }
  });
});

describe('the database a data directory serves from', () => {
  async function servedDatabase(dataDir: string): Promise<string> {
    const sql = await openEmbedded(dataDir);
    try {
      const { rows } = await sql.pool.query<{ db: string }>('select current_database() as db');
      return rows[0]!.db;
    } finally {
      await sql.close();
    }
  }

  it('is the one pg/hookline.json names: `postgres` since initdb made it, `hookline` on a cluster made before', async () => {
    const dataDir = await freshDataDir(); // the run's template: both databases exist and are migrated
    try {
      const file = path.join(dataDir, 'pg', 'hookline.json');
      const credentials = JSON.parse(await readFile(file, 'utf8')) as { database: string };
      expect(credentials.database).toBe('postgres');
      expect(await servedDatabase(dataDir)).toBe('postgres');
      // A cluster initialised before: its file names `hookline`, the database its data is in.
      await writeFile(file, `${JSON.stringify({ ...credentials, database: 'hookline' })}\n`, { mode: 0o600 });
      expect(await servedDatabase(dataDir)).toBe('hookline');
    } finally {
      await removeDataDir(dataDir);
    }
  });
});
