import { type Kysely, sql } from 'kysely';

/**
 * The event log of the PostgreSQL and PGlite adapters (design.md, "The event store port").
 *
 * `es_events`: one row per event. `transaction_id` is the writer's xid8, so readers can order by
 * (transaction_id, global_position) and see only transactions below the oldest one still running:
 * an event whose transaction commits late is never skipped. The primary key (stream_id, revision)
 * serves stream reads and makes a duplicate revision impossible whatever a writer does.
 *
 * `es_streams`: each stream's current revision (-1: no events yet) and truncation point. Appends
 * lock the rows of their streams, which serializes writers of one stream across processes.
 *
 * `es_append_batch`: one group-commit batch in one call (one round trip, its own transaction).
 * Locks the batch's streams in sorted order, checks each append against the revision the appends
 * before it left, writes the events of those that passed and NOTIFYs the channel if one is given.
 * Returns one row per append, in order: passed, the stream's revision after it (or, when it
 * failed, the actual revision), and the position of its last event.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and never see app types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('es_streams')
    // Byte order ("C"): cheaper comparisons in the keys, and one order for every server's locale.
    .addColumn('stream_id', sql`text collate "C"`, (c) => c.primaryKey())
    .addColumn('revision', 'bigint', (c) => c.notNull())
    .addColumn('truncate_before', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('es_events')
    .addColumn('global_position', 'bigserial', (c) => c.notNull())
    .addColumn('transaction_id', sql`xid8`, (c) => c.notNull().defaultTo(sql`pg_current_xact_id()`))
    .addColumn('stream_id', sql`text collate "C"`, (c) => c.notNull())
    .addColumn('revision', 'bigint', (c) => c.notNull())
    .addColumn('event_id', 'uuid', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('data', 'bytea', (c) => c.notNull())
    .addColumn('metadata', 'bytea')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('es_events_pkey', ['stream_id', 'revision'])
    .execute();

  await db.schema
    .createIndex('es_events_all_idx')
    .on('es_events')
    .columns(['transaction_id', 'global_position'])
    .unique()
    .execute();

  await createAppendBatchV1(db);
}

/** The first version of es_append_batch (also what 20261123000100's down() restores). */
// biome-ignore lint/suspicious/noExplicitAny: as above
export async function createAppendBatchV1(db: Kysely<any>): Promise<void> {
  await sql`
    create function es_append_batch(
      a_streams text[], a_expected text[], a_counts int[],
      e_ids uuid[], e_types text[], e_content_types text[], e_data text[], e_metadata text[],
      notify_channel text, notify_payload text
    ) returns table (ok boolean, revision bigint, transaction_id text, global_position text)
    language plpgsql as $fn$
    declare
      n int := coalesce(array_length(a_streams, 1), 0);
      ids text[];
      revs bigint[];
      passed boolean[] := array_fill(false, array[n]);
      base bigint[] := array_fill(0::bigint, array[n]);
      offsets int[] := array_fill(0, array[n]);
      ins_stream text[];
      ins_rev bigint[];
      ins_gp bigint[];
      k int;
      cur bigint;
      total int := 0;
      written int := 0;
    begin
      -- One lock order for every process: no deadlock between batches that share streams.
      select array_agg(s order by s) into ids from (select distinct unnest(a_streams) as s) d;
      with locked as (
        insert into es_streams as t (stream_id, revision)
        select s, -1 from unnest(ids) as s
        on conflict (stream_id) do update set revision = t.revision
        returning t.stream_id, t.revision
      )
      select array_agg(l.revision order by array_position(ids, l.stream_id)) into revs from locked l;

      for i in 1 .. n loop
        k := array_position(ids, a_streams[i]);
        cur := revs[k];
        offsets[i] := total;
        total := total + a_counts[i];
        passed[i] := case a_expected[i]
          when 'any' then true
          when 'no_stream' then cur = -1
          when 'stream_exists' then cur >= 0
          else cur = a_expected[i]::bigint
        end;
        base[i] := cur;
        if passed[i] then
          revs[k] := cur + a_counts[i];
          written := written + a_counts[i];
        end if;
      end loop;

      if written > 0 then
        with ins as (
          insert into es_events (stream_id, revision, event_id, event_type, content_type, data, metadata)
          select a.stream, a.base + g.j, e_ids[a.off + g.j], e_types[a.off + g.j], e_content_types[a.off + g.j],
            decode(e_data[a.off + g.j], 'hex'), decode(e_metadata[a.off + g.j], 'hex')
          from unnest(a_streams, passed, base, offsets, a_counts) with ordinality as a(stream, ok, base, off, cnt, ord)
          cross join lateral generate_series(1, a.cnt) as g(j)
          where a.ok
          order by a.ord, g.j
          returning es_events.stream_id, es_events.revision, es_events.global_position
        )
        select array_agg(ins.stream_id), array_agg(ins.revision), array_agg(ins.global_position)
        into ins_stream, ins_rev, ins_gp from ins;

        update es_streams t set revision = u.revision
        from unnest(ids, revs) as u(stream_id, revision)
        where t.stream_id = u.stream_id and t.revision <> u.revision;

        if notify_channel is not null then
          perform pg_notify(notify_channel, notify_payload);
        end if;
      end if;

      return query
        select a.ok, case when a.ok then a.base + a.cnt else a.base end,
          case when g.gp is null then null else pg_current_xact_id()::text end, g.gp::text
        from unnest(a_streams, passed, base, a_counts) with ordinality as a(stream, ok, base, cnt, ord)
        left join unnest(ins_stream, ins_rev, ins_gp) as g(stream, rev, gp)
          on a.ok and g.stream = a.stream and g.rev = a.base + a.cnt
        order by a.ord;
    end
    $fn$`.execute(db);
}

// biome-ignore lint/suspicious/noExplicitAny: as above
export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function es_append_batch`.execute(db);
  await db.schema.dropTable('es_events').execute();
  await db.schema.dropTable('es_streams').execute();
}
