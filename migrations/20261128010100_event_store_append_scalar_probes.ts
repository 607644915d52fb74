import { type Kysely, sql } from 'kysely';

/**
 * `es_append_batch`, ninth version: the eighth (20261126020100) with its two key probes written as
 * scalar subqueries instead of `EXISTS` (issue 17).
 *
 * PostgreSQL plans a correlated `EXISTS` in an expression twice, as a probe per row and as a hashed
 * subplan that reads the whole table once per call, and picks one by cost when the plan is made.
 * With the function's `enable_seqscan = off`, PostgreSQL 15 priced the hashed form's scan of
 * `es_events` out and probed the index, but still hashed `es_streams` through a bitmap scan of its
 * whole primary key; PostgreSQL 18 (embedded mode) counts a disabled scan apart from the cost, and
 * that choice between the two forms looks at the cost alone: it hashed the whole of `es_events` on
 * every batch (a generic plan made while the table was small, kept by the connection), so a batch
 * cost more as the log grew (bench/README.md, "Embedded mode: the key probe read the whole log").
 * A scalar subquery is only ever a probe per row: by the unique indexes each returns at most one
 * row, and both versions now probe both indexes.
 *
 * Same signature, same answers; every other batch takes the seventh version's path, as before.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and never see app types
type AnyDb = Kysely<any>;

const STREAM_LOCK_CLASS = 0x686b6c73; // 'hkls'
const STAMP_WIDTH = 20;

export async function up(db: AnyDb): Promise<void> {
  await sql`
    create or replace function es_append_batch(
      a_streams text[], a_expected text[], a_counts int[], a_groups int[],
      e_ids uuid[], e_types text[], e_content_types text[],
      e_data bytea, e_data_off int[], e_data_len int[],
      e_metadata bytea, e_metadata_off int[], e_metadata_len int[],
      notify_channel text, notify_payload text,
      e_stamp_part int[], e_stamp_add int[], e_stamp_off int[],
      e_unique_keys text[] default null
    ) returns table (ok boolean, conflict boolean, revision bigint, transaction_id text, global_position text,
      duplicate_key text, holder_stream text, holder_revision bigint)
    language plpgsql
    -- Every statement below reads rows by key only (an index probe per key, never a join that a
    -- plan could turn into a scan of a whole table or index), so one generic plan each serves all
    -- calls: none is planned again per call.
    set enable_seqscan = off
    set plan_cache_mode = force_generic_plan
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
      -- The expected revision held (own is that and no duplicate key).
      rev_ok boolean[] := array_fill(false, array[n]);
      -- The key that made the append a duplicate, or null.
      dups text[] := array_fill(null::text, array[n]);
      has_keys boolean := false;
      key_by_event text[];
      key_by_stream text[];
      seen text[] := '{}';
      saved_seen text[];
      mine text[];
      kk text;
      dup text;
      own_streams text[];
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
      -- The distinct streams. Every one is held before the first write gives this transaction its
      -- id, then each one's revision is read (-1: none yet): every writer of a stream holds its
      -- lock, so this plain read sees the last commit to each.
      if a_streams[1] = all(a_streams) then
        ids := array[a_streams[1]];
        perform pg_advisory_xact_lock(${sql.lit(STREAM_LOCK_CLASS)}, hashtext(a_streams[1]) & 2147483647);
        found := array[coalesce((select t.revision from es_streams t where t.stream_id = a_streams[1]), -1)];
      else
        select array_agg(s order by s) into ids from (select distinct unnest(a_streams) as s) d;
        select array_agg(h order by h) into keys
        from (select distinct hashtext(s) & 2147483647 as h from unnest(ids) as s) d;
        foreach key in array keys loop
          perform pg_advisory_xact_lock(${sql.lit(STREAM_LOCK_CLASS)}, key);
        end loop;
        select array_agg(coalesce((select t.revision from es_streams t where t.stream_id = d.s), -1) order by d.k)
        into found
        from unnest(ids) with ordinality as d(s, k);
      end if;

      if 'any' = all(a_expected) and 0 = all(a_groups) and 1 = all(a_counts) and notify_channel is null
        and array_remove(e_stamp_part, null) = '{}' then
        -- Lone appends of one event each with any revision (every batch of deliveries): an append
        -- fails only on a key held by an event, by another stream of that name, or by an earlier
        -- append of the batch (with one key per append, the first claim of a key is the one that
        -- passes), and each append's revision is its stream's plus the appends before it that
        -- passed (also what a failed one answers). The event i is the append i.
        return query
          with a as (
            select u.ord::int as i, u.s, u.k,
              -- Scalar probes, not EXISTS: see the comment at the top of this file.
              u.k is not null and (
                (select true from es_events h where h.unique_key = u.k) is not null
                or (u.k <> u.s and (select true from es_streams t where t.stream_id = u.k) is not null)) as held
            from unnest(a_streams, e_unique_keys) with ordinality as u(s, k, ord)
          ), b as (
            select a.i, a.s, a.k,
              a.held or (a.k is not null and row_number() over (partition by a.k order by a.i) > 1) as dup
            from a
          ), c as (
            select b.i, b.s, b.k, b.dup,
              found[array_position(ids, b.s)]
                + count(*) filter (where not b.dup) over (partition by b.s order by b.i) as r
            from b
          ), ins as (
            insert into es_events (stream_id, revision, event_id, event_type, content_type, data, metadata, unique_key)
            select c.s, c.r, e_ids[c.i], e_types[c.i], e_content_types[c.i],
              substr(e_data, e_data_off[c.i] + 1, e_data_len[c.i]),
              case when e_metadata_len[c.i] is null then null
                else substr(e_metadata, e_metadata_off[c.i] + 1, e_metadata_len[c.i]) end,
              c.k
            from c where not c.dup
            order by c.i
            returning es_events.stream_id, es_events.revision, es_events.global_position, es_events.unique_key
          ), moved as (
            -- One write per stream that moved, at its last revision.
            insert into es_streams as t (stream_id, revision)
            select ins.stream_id, max(ins.revision) from ins group by ins.stream_id
            on conflict (stream_id) do update set revision = excluded.revision
          )
          -- A duplicate names the event that holds its key: one stored before, or one this batch
          -- writes (which this statement's snapshot does not show: it is in ins); none when a
          -- stream of that name holds it.
          select not c.dup, false, c.r,
            case when g.global_position is null then null else pg_current_xact_id()::text end,
            g.global_position::text,
            case when c.dup then c.k end,
            case when c.dup then coalesce(
              (select h.stream_id::text from es_events h where h.unique_key = c.k),
              (select w.stream_id::text from ins w where w.unique_key = c.k)) end,
            case when c.dup then coalesce(
              (select h.revision from es_events h where h.unique_key = c.k),
              (select w.revision from ins w where w.unique_key = c.k)) end
          from c left join ins g on not c.dup and g.stream_id = c.s and g.revision = c.r
          order by c.i;
        return;
      end if;

      -- Each append's place among the streams.
      if cardinality(ids) = 1 then
        slot := array_fill(1, array[n]);
      else
        select array_agg(d.k order by a.ord) into slot
        from unnest(a_streams) with ordinality as a(s, ord)
        join unnest(ids) with ordinality as d(s, k) on d.s = a.s;
      end if;
      revs := found;

      -- The keys the batch's events claim that are held already: by an event (the partial unique
      -- index), or by a stream of that name (a reservation stream of before this version). Both
      -- reads see every commit: a key is only ever written by a batch that holds the stream of its
      -- event, and two batches of other streams that claim one key meet in the unique index.
      has_keys := e_unique_keys is not null and exists (select from unnest(e_unique_keys) as u(k) where u.k is not null);
      if has_keys then
        select coalesce(array_agg(distinct e.unique_key), '{}') into key_by_event
        from es_events e where e.unique_key = any(e_unique_keys);
        select coalesce(array_agg(distinct t.stream_id), '{}') into key_by_stream
        from es_streams t where t.stream_id = any(e_unique_keys);
      end if;

      for i in 1 .. n loop
        if a_groups[i] <> 0 and a_groups[i] is distinct from a_groups[i - 1] then
          -- A group starts: what it changes is undone if any of its appends fails.
          saved := revs;
          saved_seen := seen;
          group_start := i;
          group_ok := true;
        end if;
        k := slot[i];
        cur := revs[k];
        offsets[i] := total;
        total := total + a_counts[i];
        rev_ok[i] := case a_expected[i]
          when 'any' then true
          when 'no_stream' then cur = -1
          when 'stream_exists' then cur >= 0
          else cur = a_expected[i]::bigint
        end;
        dup := null;
        if has_keys and rev_ok[i] then
          -- A key is a duplicate when an event holds it, an earlier append of the batch claimed it,
          -- or a stream of that name exists that this append (its group) does not write.
          mine := '{}';
          for j in offsets[i] + 1 .. offsets[i] + a_counts[i] loop
            kk := e_unique_keys[j];
            continue when kk is null;
            if kk = any(key_by_event) or kk = any(seen) or kk = any(mine) then
              dup := kk;
            elsif kk = any(key_by_stream) then
              select array_agg(s) into own_streams from unnest(a_streams, a_groups) as u(s, g)
              where (a_groups[i] <> 0 and u.g = a_groups[i]) or u.s = a_streams[i];
              if not kk = any(own_streams) then
                dup := kk;
              end if;
            end if;
            exit when dup is not null;
            mine := mine || kk;
          end loop;
          if dup is null then
            seen := seen || mine;
          end if;
        end if;
        dups[i] := dup;
        own[i] := rev_ok[i] and dup is null;
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
          seen := saved_seen;
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
          insert into es_events (stream_id, revision, event_id, event_type, content_type, data, metadata, unique_key)
          select a.stream, a.base + g.j, e_ids[a.off + g.j], e_types[a.off + g.j], e_content_types[a.off + g.j],
            case when e_stamp_part[a.off + g.j] is null
              then substr(e_data, e_data_off[a.off + g.j] + 1, e_data_len[a.off + g.j])
              else overlay(substr(e_data, e_data_off[a.off + g.j] + 1, e_data_len[a.off + g.j])
                placing convert_to(rpad((first_rev[e_stamp_part[a.off + g.j]] + e_stamp_add[a.off + g.j])::text,
                  ${sql.lit(STAMP_WIDTH)}), 'UTF8')
                from e_stamp_off[a.off + g.j] + 1 for ${sql.lit(STAMP_WIDTH)}) end,
            case when e_metadata_len[a.off + g.j] is null then null
              else substr(e_metadata, e_metadata_off[a.off + g.j] + 1, e_metadata_len[a.off + g.j]) end,
            e_unique_keys[a.off + g.j]
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

      -- A duplicate names the event that holds its key (written by this batch, maybe), or no event
      -- when a stream of that name holds it.
      return query
        select a.ok, not a.rev_ok, case when a.ok then a.base + a.cnt else a.base end,
          case when g.gp is null then null else pg_current_xact_id()::text end, g.gp::text,
          a.dup,
          case when a.dup is null then null
            else (select h.stream_id::text from es_events h where h.unique_key = a.dup) end,
          case when a.dup is null then null
            else (select h.revision from es_events h where h.unique_key = a.dup) end
        from unnest(a_streams, passed, rev_ok, base, a_counts, dups) with ordinality as a(stream, ok, rev_ok, base, cnt, dup, ord)
        left join unnest(ins_stream, ins_rev, ins_gp) as g(stream, rev, gp)
          on a.ok and g.stream = a.stream and g.rev = a.base + a.cnt
        order by a.ord;
    end
    $fn$`.execute(db);
}

export async function down(db: AnyDb): Promise<void> {
  // The same signature: the eighth version replaces this one.
  const { up: createAppendBatchV8 } = await import('./20261126020100_event_store_append_one_statement.ts');
  await createAppendBatchV8(db);
}
