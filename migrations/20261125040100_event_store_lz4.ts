import { type Kysely, sql } from 'kysely';

/**
 * An event's data and metadata are compressed with lz4 where the server has it (issue 20). A
 * delivery's row (a 1.5 KB payload and its metadata) passes the 2 KB above which PostgreSQL
 * compresses a row's largest values, and pglz, the default, was the largest single item of
 * PostgreSQL's CPU on the signed-ingest path (perf: about a tenth of the backends' samples, in
 * `pglz_compress` under the append). lz4 compresses the same bytes in a fraction of the time and
 * decompresses them faster for every reader of `$all`; it compresses a little less.
 *
 * Only new values are written with lz4: a value keeps the method it was stored with, and reads
 * tell them apart, so nothing is rewritten. A server built without lz4 (the embedded PostgreSQL's
 * binaries) keeps pglz: the column setting is only made where `default_toast_compression` offers
 * lz4, which is how PostgreSQL says it was built with it.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and never see app types
type AnyDb = Kysely<any>;

async function hasLz4(db: AnyDb): Promise<boolean> {
  const { rows } = await sql<{ lz4: boolean }>`
    select coalesce(bool_or('lz4' = any(enumvals)), false) as lz4
    from pg_settings where name = 'default_toast_compression'`.execute(db);
  return rows[0]?.lz4 === true;
}

export async function up(db: AnyDb): Promise<void> {
  if (!(await hasLz4(db))) return;
  await sql`alter table es_events alter column data set compression lz4, alter column metadata set compression lz4`.execute(
    db,
  );
}

export async function down(db: AnyDb): Promise<void> {
  // Back to the server's default; values written with lz4 stay readable.
  await sql`alter table es_events alter column data set compression default, alter column metadata set compression default`.execute(
    db,
  );
}
