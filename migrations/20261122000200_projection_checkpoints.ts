import { type Kysely, sql } from 'kysely';

/**
 * One row per projection: the version its live tables were built with and the `$all` position of
 * the last event applied to them. The runner writes it in the same transaction as the rows it
 * applies, compare-and-set on (position, version), so a writer that lost its lock cannot move it.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and never see app types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('projection_checkpoints')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('position', 'text', (c) => c.notNull().defaultTo('start'))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: as above
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('projection_checkpoints').execute();
}
