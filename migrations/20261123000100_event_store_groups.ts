import { type Kysely, sql } from 'kysely';

/**
 * `es_append_batch`, second version: atomic groups and an update of the stream rows by key.
 *
 * - Groups (`a_groups`): appends that share a group number other than 0 pass or fail together,
 *   so one call can write several streams all or none (the store's `appendAtomic`: a delivery
 *   and its deduplication reservation in one transaction). A group's appends are adjacent in the
 *   arrays. Each row now also says whether its own expected revision failed (`conflict`), which
 *   tells the writer which append of a failed group to name in the error.
 * - The first version updated `es_streams` through a join with the batch that PostgreSQL planned
 *   as a sequential scan while the table was small, and kept that cached plan as the table grew
 *   (one row per stream, every reservation included): each batch then read the whole table. The
 *   update is now restricted by the primary key (`stream_id = any(ids)`).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and never see app types
export async function up(db: Kysely<any>): Promise<void> {
  await sql`drop function es_append_batch(text[], text[], int[], uuid[], text[], text[], text[], text[], text, text)`.execute(
    db,
  );
  await createAppendBatchV2(db);
}

/**
 * How a version of the function takes the events' bytes: its parameters in place of
 * `e_data, e_metadata`, and the expressions of the inserted `data` and `metadata` of event `i`.
 */
export interface BytesInput {
  readonly params: string;
  readonly data: (i: string) => string;
  readonly metadata: (i: string) => string;
}

/** This version's: one hex string per event in a text array. */
export const HEX_TEXT_INPUT: BytesInput = {
  params: 'e_data text[], e_metadata text[]',
  data: (i) => `decode(e_data[${i}], 'hex')`,
  metadata: (i) => `decode(e_metadata[${i}], 'hex')`,
};

/** The second version of es_append_batch; a later version changes only how the bytes come in. */
// biome-ignore lint/suspicious/noExplicitAny: as above
type AnyDb = Kysely<any>;

export async function createAppendBatchV2(db: AnyDb, input: BytesInput = HEX_TEXT_INPUT): Promise<void> {
  const at = 'a.off + g.j';
  await sql`
    create function es_append_batch(
      a_streams text[], a_expected text[], a_counts int[], a_groups int[],
      e_ids uuid[], e_types text[], e_content_types text[], ${sql.raw(input.params)},
      notify_channel text, notify_payload text
    ) returns table (ok boolean, conflict boolean, revision bigint, transaction_id text, global_position text)
    language plpgsql as $fn$
    declare
      n int := coalesce(array_length(a_streams, 1), 0);
      ids text[];
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
        if a_groups[i] <> 0 and a_groups[i] is distinct from a_groups[i - 1] then
          -- A group starts: what it changes is undone if any of its appends fails.
          saved := revs;
          group_start := i;
          group_ok := true;
        end if;
        k := array_position(ids, a_streams[i]);
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

      -- The stream rows the locking upsert created for appends that all failed stay at -1, which
      -- reads as "no stream" (see readStreamState); the next append to such a stream reuses it.
      if written > 0 then
        with ins as (
          insert into es_events (stream_id, revision, event_id, event_type, content_type, data, metadata)
          select a.stream, a.base + g.j, e_ids[a.off + g.j], e_types[a.off + g.j], e_content_types[a.off + g.j],
            ${sql.raw(input.data(at))}, ${sql.raw(input.metadata(at))}
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
        where t.stream_id = any(ids) and t.stream_id = u.stream_id and t.revision <> u.revision;

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

// biome-ignore lint/suspicious/noExplicitAny: as above
export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function es_append_batch(text[], text[], int[], int[], uuid[], text[], text[], text[], text[], text, text)`.execute(
    db,
  );
  // The first version, as migrations/20261122000100_event_store.ts created it.
  const first = await import('./20261122000100_event_store.ts');
  await first.createAppendBatchV1(db);
}
