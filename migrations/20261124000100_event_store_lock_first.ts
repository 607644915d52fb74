import { type Kysely, sql } from 'kysely';

/**
 * `es_append_batch`, fourth version: a batch takes a transaction-scoped advisory lock on each of
 * its streams, in one global order, before it writes anything.
 *
 * Why: `$all` is ordered by the writer's transaction id, and PostgreSQL gives a transaction its id
 * at its first write. The earlier versions locked their streams by writing their `es_streams` rows
 * (an upsert, in stream order), so a batch could take its id on one stream and only then wait for
 * another stream held by an older batch; it then appended that stream's next revisions under a
 * smaller transaction id than the events before them, and `$all` showed the stream out of order.
 * An advisory lock is taken without a transaction id, so a batch now gets its id only once it
 * holds every stream it writes: for any stream, the batch that writes the later revisions has the
 * larger id. It also makes it safe for one process to have two batches of one stream in flight:
 * the server, not the client, puts them in order.
 *
 * The locks are `(class 'hkls', hash of the stream id)`, the two-key form, apart from the
 * projection runtime's writer locks; streams whose hashes collide only share a lock. They are
 * taken in ascending key order, so two batches never wait for each other in a cycle.
 *
 * Holding the locks, the function reads the streams' revisions with a plain select and writes
 * each stream's row once, at its new revision. The earlier versions created a new stream's row at
 * -1 and then updated it, two tuples for every reservation stream; and their cached plans could
 * turn into scans of es_streams as it grew (measured: a batch of 64 deliveries with reservations
 * went from 3 to 30 ms over 40,000 deliveries). `enable_seqscan = off` keeps every statement on
 * its index whatever the table's size when PL/pgSQL cached the plan.
 *
 * The rest is the third version unchanged: groups that pass or fail together, each append checked
 * against the revision the appends before it left, the events' bytes in one bytea with offsets and
 * lengths, one NOTIFY per batch.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and never see app types
type AnyDb = Kysely<any>;

const V3_SIGNATURE =
  'text[], text[], int[], int[], uuid[], text[], text[], bytea, int[], int[], bytea, int[], int[], text, text';

const STREAM_LOCK_CLASS = 0x686b6c73; // 'hkls'

export async function up(db: AnyDb): Promise<void> {
  await sql`drop function es_append_batch(${sql.raw(V3_SIGNATURE)})`.execute(db);
  await sql`
    create function es_append_batch(
      a_streams text[], a_expected text[], a_counts int[], a_groups int[],
      e_ids uuid[], e_types text[], e_content_types text[],
      e_data bytea, e_data_off int[], e_data_len int[],
      e_metadata bytea, e_metadata_off int[], e_metadata_len int[],
      notify_channel text, notify_payload text
    ) returns table (ok boolean, conflict boolean, revision bigint, transaction_id text, global_position text)
    language plpgsql
    -- Each statement below touches a handful of rows by key. PL/pgSQL keeps a generic plan made
    -- while the tables were small, where a sequential scan looked cheapest, and would then scan
    -- es_streams (a row per stream, every reservation included) on every call as it grows.
    set enable_seqscan = off
    as $fn$
    declare
      n int := coalesce(array_length(a_streams, 1), 0);
      keys int[];
      key int;
      ids text[];
      slot int[];
      found bigint[];
      revs bigint[];
      saved bigint[];
      own boolean[] := array_fill(false, array[n]);
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
      group_start int := 0;
      group_ok boolean := true;
    begin
      if n = 0 then
        return;
      end if;
      -- Every stream of the batch is held before the first write gives this transaction its id.
      select array_agg(h order by h) into keys
      from (select distinct hashtext(s) & 2147483647 as h from unnest(a_streams) as s) d;
      foreach key in array keys loop
        perform pg_advisory_xact_lock(${sql.lit(STREAM_LOCK_CLASS)}, key);
      end loop;

      -- The distinct streams, each append's place among them, and their revisions (-1: none yet).
      -- Every writer of a stream holds its lock, so this plain read sees the last commit to each.
      select array_agg(s order by s) into ids from (select distinct unnest(a_streams) as s) d;
      select array_agg(d.k order by a.ord) into slot
      from unnest(a_streams) with ordinality as a(s, ord)
      join unnest(ids) with ordinality as d(s, k) on d.s = a.s;
      select array_agg(coalesce(t.revision, -1) order by d.k) into found
      from unnest(ids) with ordinality as d(s, k)
      left join es_streams t on t.stream_id = d.s;
      revs := found;

      for i in 1 .. n loop
        if a_groups[i] <> 0 and a_groups[i] is distinct from a_groups[i - 1] then
          -- A group starts: what it changes is undone if any of its appends fails.
          saved := revs;
          group_start := i;
          group_ok := true;
        end if;
        k := slot[i];
        cur := revs[k];
        offsets[i] := total;
        total := total + a_counts[i];
        own[i] := case a_expected[i]
          when 'any' then true
          when 'no_stream' then cur = -1
          when 'stream_exists' then cur >= 0
          else cur = a_expected[i]::bigint
        end;
        base[i] := cur;
        passed[i] := own[i];
        if own[i] then
          revs[k] := cur + a_counts[i];
        else
          group_ok := false;
        end if;
        if a_groups[i] <> 0 and a_groups[i] is distinct from a_groups[i + 1] and not group_ok then
          revs := saved;
          for j in group_start .. i loop
            passed[j] := false;
          end loop;
        end if;
      end loop;

      for i in 1 .. n loop
        if passed[i] then
          written := written + a_counts[i];
        end if;
      end loop;

      if written > 0 then
        with ins as (
          insert into es_events (stream_id, revision, event_id, event_type, content_type, data, metadata)
          select a.stream, a.base + g.j, e_ids[a.off + g.j], e_types[a.off + g.j], e_content_types[a.off + g.j],
            substr(e_data, e_data_off[a.off + g.j] + 1, e_data_len[a.off + g.j]),
            case when e_metadata_len[a.off + g.j] is null then null
              else substr(e_metadata, e_metadata_off[a.off + g.j] + 1, e_metadata_len[a.off + g.j]) end
          from unnest(a_streams, passed, base, offsets, a_counts) with ordinality as a(stream, ok, base, off, cnt, ord)
          cross join lateral generate_series(1, a.cnt) as g(j)
          where a.ok
          order by a.ord, g.j
          returning es_events.stream_id, es_events.revision, es_events.global_position
        )
        select array_agg(ins.stream_id), array_agg(ins.revision), array_agg(ins.global_position)
        into ins_stream, ins_rev, ins_gp from ins;

        -- One write per stream that moved: a new stream's row is created at its final revision.
        insert into es_streams as t (stream_id, revision)
        select u.s, u.r from unnest(ids, revs, found) as u(s, r, f)
        where u.r <> u.f
        on conflict (stream_id) do update set revision = excluded.revision;

        if notify_channel is not null then
          perform pg_notify(notify_channel, notify_payload);
        end if;
      end if;

      return query
        select a.ok, not a.own, case when a.ok then a.base + a.cnt else a.base end,
          case when g.gp is null then null else pg_current_xact_id()::text end, g.gp::text
        from unnest(a_streams, passed, own, base, a_counts) with ordinality as a(stream, ok, own, base, cnt, ord)
        left join unnest(ins_stream, ins_rev, ins_gp) as g(stream, rev, gp)
          on a.ok and g.stream = a.stream and g.rev = a.base + a.cnt
        order by a.ord;
    end
    $fn$`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  await sql`drop function es_append_batch(${sql.raw(V3_SIGNATURE)})`.execute(db);
  // The third version, as migrations/20261123000200_event_store_bytes.ts created it.
  const { createAppendBatchV2 } = await import('./20261123000100_event_store_groups.ts');
  const { BLOB_INPUT } = await import('./20261123000200_event_store_bytes.ts');
  await createAppendBatchV2(db, BLOB_INPUT);
}
