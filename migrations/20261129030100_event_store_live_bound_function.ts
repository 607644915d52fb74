import { type Kysely, sql } from 'kysely';

/**
 * `es_live_bound()`: the live bound of `$all` reads (src/eventstore/sql/reads.ts, issue 22) as a
 * PL/pgSQL function, with the same query it was written inline with before.
 *
 * A `$all` page is read with `COPY (select …) TO STDOUT`, which takes no parameters and so is
 * parsed, analysed and planned on every call; the bound's common table expressions over
 * `pg_locks` were most of that planning. Inside a PL/pgSQL function the query is planned once per
 * connection and the plan kept (it has no parameters, so the generic plan is the only one). Measured
 * alone (one connection, pages of 16 events, bench/README.md, "The live tail's bound planned once"):
 * 583 to 667 µs of backend CPU a page read inline, 417 to 483 µs through the function.
 *
 * STABLE: it runs in the calling statement's snapshot, so `pg_current_snapshot()` is the read's own,
 * and a reference in an index condition is evaluated once, when the scan starts.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and never see app types
type AnyDb = Kysely<any>;

const STREAM_LOCK_CLASS = 0x686b6c73; // 'hkls'

export async function up(db: AnyDb): Promise<void> {
  await sql`
    create or replace function es_live_bound() returns xid8
    language plpgsql stable
    as $$
    begin
      return (
        with locks as materialized (
          select locktype, database, relation, classid, objsubid, virtualtransaction, transactionid, mode, granted
          from pg_locks
        ),
        writers as (
          select virtualtransaction from locks
          where database = (select oid from pg_database where datname = current_database())
            and ((locktype = 'advisory' and classid = ${sql.raw(String(STREAM_LOCK_CLASS))}::oid and objsubid = 2)
              or (locktype = 'relation' and relation in ('es_events'::regclass, 'es_streams'::regclass)
                and mode not in ('AccessShareLock', 'RowShareLock')))
        ),
        bystanders as (
          select transactionid::text::bigint as low from locks t
          where locktype = 'transactionid' and granted and mode = 'ExclusiveLock'
            and not exists (select 1 from writers w where w.virtualtransaction = t.virtualtransaction)
        )
        select coalesce(min(x), pg_snapshot_xmax(pg_current_snapshot()))
        from pg_snapshot_xip(pg_current_snapshot()) as x
        where not exists (select 1 from bystanders b where b.low = x::text::bigint % 4294967296));
    end
    $$`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  await sql`drop function if exists es_live_bound()`.execute(db);
}
