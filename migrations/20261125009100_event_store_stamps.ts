import { type Kysely, sql } from 'kysely';

/**
 * `es_append_batch`, fifth version: an event of an atomic group may carry a stamp, the revision of
 * another append of its group written into its data, so that events appended together can name
 * each other by revision. The hand-off of a delivery (issue 23) appends the delivery, its todo,
 * the doorbell and the disposition in one group, and the todo names the delivery's event id (its
 * revision + 1), which nobody knows before the batch's transaction holds the `deliveries` lock.
 *
 * A stamp is three numbers per event: the append (1-based index into the batch's appends) whose
 * first revision is meant, a number added to it, and the byte offset in the event's data of
 * twenty spaces that the decimal number overwrites, left-aligned (a JSON number followed by white
 * space is still JSON). Events without a stamp are written byte for byte, as before. The rest is
 * the fourth version unchanged.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and never see app types
type AnyDb = Kysely<any>;

const V4_SIGNATURE =
  'text[], text[], int[], int[], uuid[], text[], text[], bytea, int[], int[], bytea, int[], int[], text, text';
const V5_SIGNATURE = `${V4_SIGNATURE}, int[], int[], int[]`;

const STREAM_LOCK_CLASS = 0x686b6c73; // 'hkls'
const STAMP_WIDTH = 20;

export async function up(db: AnyDb): Promise<void> {
  await sql`drop function es_append_batch(${sql.raw(V4_SIGNATURE)})`.execute(db);
  await sql`
    create function es_append_batch(
      a_streams text[], a_expected text[], a_counts int[], a_groups int[],
      e_ids uuid[], e_types text[], e_content_types text[],
      e_data bytea, e_data_off int[], e_data_len int[],
      e_metadata bytea, e_metadata_off int[], e_metadata_len int[],
      notify_channel text, notify_payload text,
      e_stamp_part int[], e_stamp_add int[], e_stamp_off int[]
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
      -- The revision of each append's first event: what a stamp names.
      first_rev bigint[] := array_fill(0::bigint, array[n]);
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
        first_rev[i] := cur + 1;
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
            case when e_stamp_part[a.off + g.j] is null
              then substr(e_data, e_data_off[a.off + g.j] + 1, e_data_len[a.off + g.j])
              else overlay(substr(e_data, e_data_off[a.off + g.j] + 1, e_data_len[a.off + g.j])
                placing convert_to(rpad((first_rev[e_stamp_part[a.off + g.j]] + e_stamp_add[a.off + g.j])::text,
                  ${sql.lit(STAMP_WIDTH)}), 'UTF8')
                from e_stamp_off[a.off + g.j] + 1 for ${sql.lit(STAMP_WIDTH)}) end,
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
  await sql`drop function es_append_batch(${sql.raw(V5_SIGNATURE)})`.execute(db);
  // The fourth version: the third as it was, then the fourth's own up (which replaces the third).
  const { createAppendBatchV2 } = await import('./20261123000100_event_store_groups.ts');
  const { BLOB_INPUT } = await import('./20261123000200_event_store_bytes.ts');
  await createAppendBatchV2(db, BLOB_INPUT);
  const v4 = await import('./20261124000100_event_store_lock_first.ts');
  await v4.up(db);
}
