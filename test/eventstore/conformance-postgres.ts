import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { expect, it } from 'vitest';
import { openPostgres } from '../../src/db/open.ts';
import { jsonEvent, parseData } from '../../src/eventstore/codec.ts';
import { type EventStore, StoreUnavailableError } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import {
  expectAscending,
  follow,
  ids,
  type SuiteContext,
  toArray,
  uniqueStream,
  visible,
} from './helpers.ts';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Appends event `i` at revision i, riding out a lost connection: an unknown outcome is read back. */
async function appendEventually(store: EventStore, streamId: string, i: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      await store.append(streamId, [jsonEvent('N', { i })], {
        expectedRevision: i === 0 ? 'no_stream' : BigInt(i - 1),
      });
      return;
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) throw err;
      try {
        if ((await store.streamInfo(streamId)).revision >= BigInt(i)) return;
      } catch {}
      await pause(50);
    }
  }
  throw new Error(`could not append ${i} to ${streamId}`);
}

/** Whether a session of this database waits on a lock while running es_append_batch. */
async function appendWaitingOnLock(client: pg.Client): Promise<boolean> {
  const { rows } = await client.query(
    `select 1 from pg_stat_activity
     where datname = current_database() and wait_event_type = 'Lock' and query like '%es_append_batch%'`,
  );
  return rows.length > 0;
}

/** PostgreSQL only: other sessions on the same database. */
export function registerPostgresCases(ctx: SuiteContext): void {
  it('a transaction held open on another connection and committed after later appends is delivered once, nothing skipped', async () => {
    const { store, harness } = ctx;
    const prefix = uniqueStream('late');
    const mine = (e: { streamId: string }) => e.streamId.startsWith(`${prefix}-`);
    const start = await store.headPosition();
    const f = follow(store, start, mine);
    await store.append(`${prefix}-first`, [jsonEvent('First', {})]);
    await f.until(1);

    const held = new pg.Client({ connectionString: harness.postgres!.url });
    await held.connect();
    const lateId = randomUUID();
    try {
      // The adapter's own columns and defaults: transaction_id is this transaction's xid8.
      await held.query('begin');
      await held.query('insert into es_streams (stream_id, revision) values ($1, 0)', [`${prefix}-held`]);
      await held.query(
        `insert into es_events (stream_id, revision, event_id, event_type, content_type, data)
         values ($1, 0, $2, 'Late', 'application/json', $3)`,
        [`${prefix}-held`, lateId, Buffer.from('{"late":true}')],
      );
      await Promise.all(
        Array.from({ length: 32 }, async (_, w) => {
          for (let r = 0; r < 3; r++) await store.append(`${prefix}-${w}`, [jsonEvent('After', { w, r })]);
        }),
      );
      // Longer than two poll cycles (200 ms here): the reader must hold back behind the open transaction.
      await pause(500);
      expect(f.seen.map((e) => e.type)).toEqual(['First']);
      await held.query('commit');
    } finally {
      await held.end();
    }

    const seen = await f.until(2 + 96);
    f.stop();
    expect(seen).toHaveLength(98);
    expect(new Set(ids(seen)).size).toBe(98);
    expect(seen.filter((e) => e.id === lateId)).toHaveLength(1);
    // Its xid is below every later append's, so it sorts right after the first event.
    expect(seen[1]!.id).toBe(lateId);
    expect(parseData(seen[1]!)).toEqual({ late: true });
    expectAscending(store, seen);
    expect(ids(seen)).toEqual(ids((await toArray(store.readAll({ after: start }))).filter(mine)));
  });

  it('the live tail waits for an older open event writer (lock first, events later) but not for a transaction that writes no events', async () => {
    // The visibility rule of the live tail (reads.ts, readLiveBound): only a transaction that holds
    // a stream lock of es_append_batch's class, or a writing lock on es_events/es_streams, holds the
    // tail back. This one takes the lock first and gets its id from an unrelated write, as a batch
    // does when it has read its streams: its events come later, under an id below every append of
    // the test. A bound that overlooked it would pass its id, and its events would be skipped.
    const { store, harness } = ctx;
    const prefix = uniqueStream('writer');
    const mine = (e: { streamId: string }) => e.streamId.startsWith(`${prefix}-`);
    const start = await store.headPosition();
    const f = follow(store, start, mine);
    await store.append(`${prefix}-first`, [jsonEvent('First', {})]);
    await f.until(1);

    const idle = new pg.Client({ connectionString: harness.postgres!.url });
    const held = new pg.Client({ connectionString: harness.postgres!.url });
    await idle.connect();
    await held.connect();
    const lateId = randomUUID();
    try {
      // Open throughout, with an id older than everything below: it writes no events.
      await idle.query('begin');
      await idle.query('create temporary table scratch (n int) on commit drop');
      await idle.query('insert into scratch values (1)');
      await held.query('begin');
      await held.query('select pg_advisory_xact_lock_shared($1, 0)', [0x686b6c73]);
      await held.query('create temporary table scratch (n int) on commit drop');
      await held.query('insert into scratch values (1)');
      await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          for (let r = 0; r < 3; r++) await store.append(`${prefix}-${w}`, [jsonEvent('After', { w, r })]);
        }),
      );
      await pause(500);
      expect(f.seen.map((e) => e.type)).toEqual(['First']);
      await held.query('insert into es_streams (stream_id, revision) values ($1, 0)', [`${prefix}-held`]);
      await held.query(
        `insert into es_events (stream_id, revision, event_id, event_type, content_type, data)
         values ($1, 0, $2, 'Late', 'application/json', $3)`,
        [`${prefix}-held`, lateId, Buffer.from('{"late":true}')],
      );
      await held.query('commit');
      // The transaction that writes no events is still open: the tail must not wait for it.
      const seen = await f.until(2 + 24);
      expect(seen).toHaveLength(26);
      expect(new Set(ids(seen)).size).toBe(26);
      expect(seen[1]!.id).toBe(lateId);
      expectAscending(store, seen);
      await idle.query('commit');
    } finally {
      f.stop();
      await held.end();
      await idle.end();
    }
    expect(ids(f.seen)).toEqual(ids((await toArray(store.readAll({ after: start }))).filter(mine)));
  });

  it('committedPosition covers a commit that an older open transaction still hides; headPosition stops before it', async () => {
    // What a read-your-writes wait must aim at: waiting for headPosition returned before this
    // commit reached any read model (issue: settled() answered without the second push's todo).
    const { store, harness } = ctx;
    const held = new pg.Client({ connectionString: harness.postgres!.url });
    await held.connect();
    try {
      // An event writer's open transaction (another batch's: a stream lock, then an id), below the append's.
      await held.query('begin');
      await held.query('select pg_advisory_xact_lock_shared($1, 0)', [0x686b6c73]);
      await held.query('select pg_current_xact_id()');
      const { position } = await store.append(uniqueStream('hidden'), [jsonEvent('Hidden', {})]);
      expect(store.comparePositions(await store.headPosition(), position)).toBeLessThan(0);
      expect(await store.committedPosition()).toBe(position);
      await held.query('commit');
    } finally {
      await held.end();
    }
    const { position } = await store.append(uniqueStream('seen'), [jsonEvent('Seen', {})]);
    expect(await store.headPosition()).toBe(position);
    expect(await store.committedPosition()).toBe(position);
  });

  it('a transaction open in another database of the server delays neither the head, nor readAll, nor a subscriber', async () => {
    // The server may be shared (other applications, other test suites). pg_snapshot_xmin is the
    // whole cluster's: bounded by it, every append after that transaction began stayed hidden
    // from headPosition and readAll until it ended, and a wait for the head stalled with it.
    const { store, harness } = ctx;
    const prefix = uniqueStream('elsewhere');
    const mine = (e: { streamId: string }) => e.streamId.startsWith(`${prefix}-`);
    // The same server's `postgres` database (the URL's last path segment is the database).
    const elsewhere = harness.postgres!.url.replace(/\/[^/?]*(\?|$)/, '/postgres$1');
    expect(elsewhere).not.toBe(harness.postgres!.url);
    const other = new pg.Client({ connectionString: elsewhere });
    await other.connect();
    const start = await store.headPosition();
    const f = follow(store, start, mine);
    try {
      await other.query('begin');
      await other.query('select pg_current_xact_id()');
      const { position } = await store.append(`${prefix}-a`, [jsonEvent('A', {})]);
      expect(await store.headPosition()).toBe(position);
      expect(await store.committedPosition()).toBe(position);
      const read = (await toArray(store.readAll({ after: start }))).filter(mine);
      expect(read.map((e) => e.position)).toEqual([position]);
      expect((await f.until(1)).map((e) => e.position)).toEqual([position]);
      await other.query('rollback');
    } finally {
      f.stop();
      await other.end();
    }
  });

  it('a batch that waits for a stream held elsewhere still keeps every stream in revision order in $all', async () => {
    // $all is ordered by transaction id, given at a transaction's first write. A batch that wrote
    // one stream and then waited for another must not append that other stream's next revision
    // under an id older than the revision before it (what the upsert-locking version did).
    const { store, harness } = ctx;
    const prefix = uniqueStream('order');
    const [first, blocked, hot] = [`${prefix}-a1`, `${prefix}-a2`, `${prefix}-hot`];
    const start = await store.headPosition();
    let last = start;
    const other = openPostgres(harness.postgres!.url, { max: 2 });
    const otherStore = await createSqlEventStore(other);
    const holder = new pg.Client({ connectionString: harness.postgres!.url });
    const watcher = new pg.Client({ connectionString: harness.postgres!.url });
    await holder.connect();
    await watcher.connect();
    try {
      // Another process is in the middle of appending to `blocked`.
      await holder.query('begin');
      await holder.query(
        `select * from es_append_batch(array[$1], array['any'], array[1], array[0], array[$2::uuid],
           array['Held'], array['application/json'], $3::bytea, array[0], array[2], ''::bytea, array[0],
           array[null::int], null, '', array[null::int], array[null::int], array[null::int])`,
        [blocked, randomUUID(), Buffer.from('{}')],
      );
      // One batch over all three streams: it must wait for `blocked`.
      const batch = store.appendAtomic!([
        { streamId: first, events: [jsonEvent('Batch', { s: 'a1' })] },
        { streamId: blocked, events: [jsonEvent('Batch', { s: 'a2' })] },
        { streamId: hot, events: [jsonEvent('Batch', { s: 'hot' })] },
      ]);
      for (let i = 0; !(await appendWaitingOnLock(watcher)); i++) {
        if (i > 200) throw new Error('the batch never waited for the held stream');
        await pause(10);
      }
      // Meanwhile a third writer appends to `hot`, then the held transaction ends.
      const third = otherStore.append(hot, [jsonEvent('Third', {})]);
      await pause(100);
      await holder.query('commit');
      const [batched, thirds] = await Promise.all([batch, third]);
      for (const { position } of [...batched, thirds]) {
        if (store.comparePositions(position, last) > 0) last = position;
      }
    } finally {
      await holder.end();
      await watcher.end();
      await otherStore.close();
      await other.close();
    }
    // Another test's open transaction on the shared cluster holds back what `$all` shows.
    await visible(store, last);
    const all = (await toArray(store.readAll({ after: start }))).filter((e) => e.streamId.startsWith(prefix));
    for (const s of [first, blocked, hot]) {
      const revisions = all.filter((e) => e.streamId === s).map((e) => e.revision);
      expect(revisions, s).toEqual([...revisions].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    expect(all.filter((e) => e.streamId === hot)).toHaveLength(2);
    expectAscending(store, all);
  });

  it('a subscription survives its connections being terminated and resumes with no gap or repeat', async () => {
    const { store, harness } = ctx;
    const s = uniqueStream('dropped');
    const f = follow(store, await store.headPosition(), (e) => e.streamId === s);
    for (let i = 0; i < 5; i++) await appendEventually(store, s, i);
    await f.until(5);

    // Terminate every connection of the database repeatedly while appends go on, so queries die mid-flight.
    let killing = true;
    let killed = 0;
    const killer = (async () => {
      while (killing) {
        killed += await harness.postgres!.terminateBackends();
        await pause(40);
      }
    })();
    try {
      for (let i = 5; i < 20; i++) {
        await appendEventually(store, s, i);
        await pause(30);
      }
    } finally {
      killing = false;
      await killer;
    }
    expect(killed).toBeGreaterThan(0);

    const seen = await f.until(20);
    f.stop();
    expect(seen.map((e) => parseData<{ i: number }>(e).i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(new Set(ids(seen)).size).toBe(20);
  });
}
