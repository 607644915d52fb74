import { promises as fs } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Kysely, sql } from 'kysely';
import {
  DEFAULT_MIGRATION_TABLE,
  FileMigrationProvider,
  type MigrationResult,
  Migrator,
} from 'kysely/migration';

const migrationFolder = fileURLToPath(new URL('../../migrations', import.meta.url));

export function createMigrator<T>(db: Kysely<T>): Migrator {
  return new Migrator({
    db,
    provider: new FileMigrationProvider({ fs, path, migrationFolder }),
  });
}

/** The migrations in the folder, named as FileMigrationProvider names them (the file name without its extension). */
async function migrationNames(): Promise<string[]> {
  return (await fs.readdir(migrationFolder))
    .filter((file) => /\.[cm]?[jt]s$/.test(file) && !/\.d\.[cm]?ts$/.test(file))
    .map((file) => file.slice(0, file.lastIndexOf('.')));
}

/**
 * Whether the schema is at head: every migration in the folder has run, and no other. Two short
 * queries, where the migrator checks its tables through the catalogue, takes its lock and imports
 * every migration file: every start but the first finds the schema at head (bench/README.md,
 * "Start-up time"). Anything else (a fresh database, a pending migration, a name the folder does
 * not hold) is the migrator's to handle, with its lock and its errors.
 */
export async function schemaAtHead<T>(db: Kysely<T>): Promise<boolean> {
  const [names, table] = await Promise.all([
    migrationNames(),
    sql<{ present: boolean }>`select to_regclass(${DEFAULT_MIGRATION_TABLE}) is not null as present`.execute(
      db,
    ),
  ]);
  if (!table.rows[0]?.present) return false;
  const { rows } = await sql<{
    name: string;
  }>`select name from ${sql.table(DEFAULT_MIGRATION_TABLE)}`.execute(db);
  const executed = new Set(rows.map((r) => r.name));
  return executed.size === names.length && names.every((name) => executed.has(name));
}

/** Runs every pending migration; throws with the failing migration's name. The same in every mode. */
export async function migrateToLatest<T>(db: Kysely<T>): Promise<readonly MigrationResult[]> {
  if (await schemaAtHead(db)) return []; // what the migrator answers when nothing is pending
  const { error, results } = await createMigrator(db).migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`migration ${failed} failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  return results ?? [];
}
