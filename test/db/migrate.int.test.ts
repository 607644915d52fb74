import { readdirSync } from 'node:fs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, schemaAtHead } from '../../src/db/migrate.ts';
import { openPostgres, type SqlDatabase } from '../../src/db/open.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

const hasPg = await postgresAvailable();
const migrationCount = readdirSync(new URL('../../migrations', import.meta.url)).filter((f) =>
  f.endsWith('.ts'),
).length;

describe.runIf(hasPg)('migrations at start: the schema at head is found in one look', () => {
  let database: TestDatabase;
  let db: SqlDatabase;
  beforeAll(async () => {
    database = await createTestDatabase('hookline_migrate');
    db = openPostgres(database.url, { max: 2 });
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  it('a fresh database is not at head (and the look creates nothing)', async () => {
    expect(await schemaAtHead(db.db)).toBe(false);
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from pg_tables where schemaname = 'public'`.execute(db.db);
    expect(rows[0]!.n).toBe(0);
  });

  it('after every migration ran, it is; and migrating again runs none', async () => {
    const first = await migrateToLatest(db.db);
    expect(first.map((r) => r.status)).toEqual(Array(migrationCount).fill('Success'));
    expect(await schemaAtHead(db.db)).toBe(true);
    expect(await migrateToLatest(db.db)).toEqual([]);
  });

  it('a migration that has not run puts it behind head', async () => {
    const { rows } = await sql<{
      name: string;
    }>`select name from kysely_migration order by name desc limit 1`.execute(db.db);
    const last = rows[0]!.name;
    // Its record removed, the last migration counts as pending (its tables stay: not run again here).
    await sql`delete from kysely_migration where name = ${last}`.execute(db.db);
    expect(await schemaAtHead(db.db)).toBe(false);
    await sql`insert into kysely_migration (name, timestamp) values (${last}, now()::text)`.execute(db.db);
    expect(await schemaAtHead(db.db)).toBe(true);
  });

  it('a migration the folder does not hold is not head either: the migrator reports it', async () => {
    await sql`insert into kysely_migration (name, timestamp) values ('29991231000000_from_a_newer_hookline', now()::text)`.execute(
      db.db,
    );
    expect(await schemaAtHead(db.db)).toBe(false);
    await expect(migrateToLatest(db.db)).rejects.toThrow(/29991231000000_from_a_newer_hookline/);
    await sql`delete from kysely_migration where name = '29991231000000_from_a_newer_hookline'`.execute(
      db.db,
    );
    expect(await schemaAtHead(db.db)).toBe(true);
  });
});
