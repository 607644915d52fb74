import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { openPostgres, type SqlDatabase } from '../../src/db/open.ts';
import { jsonEvent, parseData } from '../../src/eventstore/codec.ts';
import { type EventStore, StoreUnavailableError } from '../../src/eventstore/port.ts';
import { createSqlEventStore, PRESENCE_HEARTBEAT_MS } from '../../src/eventstore/sql/store.ts';
import {
  createTestDatabase,
  PG_ADMIN_URL,
  postgresAvailable,
  type TestDatabase,
} from '../support/services.ts';
import { follow, uniqueStream } from './helpers.ts';

/**
 * The live end of `$all` is read on a wake-up after each commit, not on the next poll (issue 22;
 * the MCP doorbell of issue 23 rides on it). Every store here polls once per ten minutes, far past
 * any wait below: an event that reaches a subscriber got there by a wake-up (this process's own
 * commit, or PostgreSQL NOTIFY from another process's), or the wait times out and the test fails.
 */
const NO_POLL_MS = 10 * 60_000;
/** Generous for a loaded machine, and still a small fraction of NO_POLL_MS. */
const ARRIVAL_TIMEOUT_MS = 30_000;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

const hasPg = await postgresAvailable();

describe.runIf(hasPg)('wake-up on commit (PostgreSQL, poll out of reach)', () => {
  let database: TestDatabase;
  const handles: SqlDatabase[] = [];
  const stores: EventStore[] = [];

  /** A store on a pool of its own: to the database, another process. */
  async function openStore(): Promise<EventStore> {
    const sql = openPostgres(database.url);
    handles.push(sql);
    const store = await createSqlEventStore(sql, { pollMs: NO_POLL_MS });
    stores.push(store);
    return store;
  }

  async function terminateBackends(): Promise<number> {
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    try {
      const { rows } = await admin.query(
        'select pg_terminate_backend(pid) as ok from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
        [database.name],
      );
      return rows.filter((r) => r.ok).length;
    } finally {
      await admin.end();
    }
  }

  /** Waits until a connection of the test database LISTENs on `channel`. */
  async function listening(channel: string): Promise<void> {
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    try {
      for (let i = 0; i < 600; i++) {
        const { rows } = await admin.query(
          'select 1 from pg_stat_activity where datname = $1 and query = $2',
          [database.name, `listen "${channel}"`],
        );
        if (rows.length > 0) return;
        await pause(50);
      }
      throw new Error(`nothing listens on ${channel}`);
    } finally {
      await admin.end();
    }
  }

  /** Appends, riding out connections that were just terminated. */
  async function appendEventually(store: EventStore, streamId: string, i: number): Promise<void> {
    for (let attempt = 0; attempt < 100; attempt++) {
      try {
        await store.append(streamId, [jsonEvent('N', { i })], {
          expectedRevision: i === 0 ? 'no_stream' : BigInt(i - 1),
        });
        return;
      } catch (err) {
        if (!(err instanceof StoreUnavailableError)) throw err;
        if ((await store.streamInfo(streamId).catch(() => undefined))?.revision === BigInt(i)) return;
        await pause(50);
      }
    }
    throw new Error(`could not append ${i} to ${streamId}`);
  }

  beforeAll(async () => {
    database = await createTestDatabase('hookline_wakeup');
    const migrator = openPostgres(database.url, { max: 1 });
    await migrateToLatest(migrator.db);
    await migrator.close();
  });

  afterAll(async () => {
    for (const s of stores) await s.close();
    for (const h of handles) await h.close();
    await database?.drop();
  });

  it("a store's own append wakes its live subscribers", async () => {
    const store = await openStore();
    const s = uniqueStream('own');
    const f = follow(store, await store.headPosition(), (e) => e.streamId === s);
    for (let i = 0; i < 5; i++) {
      // Let the shared reader settle into its wait first: the append, not a read in flight, must wake it.
      await pause(50);
      await store.append(s, [jsonEvent('N', { i })]);
      await f.until(i + 1, ARRIVAL_TIMEOUT_MS);
    }
    f.stop();
    expect(f.seen.map((e) => parseData<{ i: number }>(e).i)).toEqual([0, 1, 2, 3, 4]);
  });

  it("another process's append reaches a live subscriber through NOTIFY", async () => {
    const writer = await openStore();
    const reader = await openStore();
    const s = uniqueStream('notified');
    const f = follow(reader, await reader.headPosition(), (e) => e.streamId === s);
    // Past the read that follows the reader's listener connecting (see the last case).
    await listening('hookline_events');
    await pause(500);
    for (let i = 0; i < 5; i++) {
      await pause(50);
      await writer.append(s, [jsonEvent('N', { i })]);
      await f.until(i + 1, ARRIVAL_TIMEOUT_MS);
    }
    f.stop();
    expect(f.seen.map((e) => parseData<{ i: number }>(e).i)).toEqual([0, 1, 2, 3, 4]);
  });

  it('a notified commit hidden behind an older open transaction is read once that one ends', async () => {
    const writer = await openStore();
    const reader = await openStore();
    const s = uniqueStream('hidden');
    const f = follow(reader, await reader.headPosition(), (e) => e.streamId === s);
    await writer.append(s, [jsonEvent('N', { i: 0 })]);
    await f.until(1, ARRIVAL_TIMEOUT_MS);

    // A writer's transaction with an xid older than the append's (it holds a stream lock of
    // es_append_batch's class, as a batch of another process does): it keeps the append invisible
    // to `$all` readers after the NOTIFY, and ends without a notification.
    const held = new pg.Client({ connectionString: database.url });
    await held.connect();
    try {
      await held.query('begin');
      await held.query('select pg_advisory_xact_lock_shared($1, 0)', [0x686b6c73]);
      await held.query('select pg_current_xact_id()');
      await writer.append(s, [jsonEvent('N', { i: 1 })]);
      await pause(300);
      expect(f.seen).toHaveLength(1);
      await held.query('commit');
    } finally {
      await held.end();
    }
    await f.until(2, ARRIVAL_TIMEOUT_MS);
    f.stop();
    expect(f.seen.map((e) => parseData<{ i: number }>(e).i)).toEqual([0, 1]);
  });

  it('a notified commit is read at once behind an older open transaction that writes no events', async () => {
    // A projection's batch, a session in another database: an xid older than the append's keeps
    // pg_snapshot_xmin below it, and used to hide it until that transaction ended.
    const writer = await openStore();
    const reader = await openStore();
    const s = uniqueStream('unrelated');
    const f = follow(reader, await reader.headPosition(), (e) => e.streamId === s);
    await writer.append(s, [jsonEvent('N', { i: 0 })]);
    await f.until(1, ARRIVAL_TIMEOUT_MS);
    const held = new pg.Client({ connectionString: database.url });
    await held.connect();
    try {
      await held.query('begin');
      await held.query('select pg_current_xact_id()');
      await writer.append(s, [jsonEvent('N', { i: 1 })]);
      await f.until(2, ARRIVAL_TIMEOUT_MS);
      await held.query('commit');
    } finally {
      await held.end();
    }
    f.stop();
    expect(f.seen.map((e) => parseData<{ i: number }>(e).i)).toEqual([0, 1]);
  });

  it('wake-ups resume after the LISTEN connection is terminated', async () => {
    const writer = await openStore();
    const reader = await openStore();
    const s = uniqueStream('relisten');
    const f = follow(reader, await reader.headPosition(), (e) => e.streamId === s);
    await appendEventually(writer, s, 0);
    await f.until(1, ARRIVAL_TIMEOUT_MS);

    expect(await terminateBackends()).toBeGreaterThan(0);
    // Time to reconnect, and for the read that follows it: the appends after it arrive only by a
    // NOTIFY on the new connection.
    await appendEventually(writer, s, 1);
    await f.until(2, ARRIVAL_TIMEOUT_MS);
    await pause(500);
    for (let i = 2; i < 5; i++) {
      await pause(50);
      await appendEventually(writer, s, i);
      await f.until(i + 1, ARRIVAL_TIMEOUT_MS);
    }
    f.stop();
    expect(f.seen.map((e) => parseData<{ i: number }>(e).i)).toEqual([0, 1, 2, 3, 4]);
    expect(new Set(f.seen.map((e) => e.id)).size).toBe(5);
  });

  it('a store notifies only while another process listens: alone, its commits send no NOTIFY', async () => {
    // A NOTIFY is a commit of its own: nobody needs it when hookline runs alone. A plain LISTEN
    // (this test's client) hears what the stores send on a channel of their own.
    const channel = `presence_${randomUUID().slice(0, 8)}`;
    const spy = new pg.Client({ connectionString: database.url });
    await spy.connect();
    const heard: string[] = [];
    spy.on('notification', (m) => {
      if (m.channel === channel) heard.push(m.payload ?? '');
    });
    await spy.query(`listen "${channel}"`);
    const hellos = () => heard.filter((p) => p.startsWith('hello '));
    const commits = () => heard.filter((p) => !p.startsWith('hello '));
    const until = async (what: string, ok: () => boolean) => {
      for (let i = 0; !ok(); i++) {
        if (i > 600) throw new Error(`timed out waiting for ${what}`);
        await pause(50);
      }
    };
    const open = async () => {
      const sql = openPostgres(database.url);
      handles.push(sql);
      const store = await createSqlEventStore(sql, { pollMs: NO_POLL_MS, notifyChannel: channel });
      stores.push(store);
      return store;
    };
    try {
      const alone = await open();
      await until("the store's hello", () => hellos().length >= 1);
      // A store notifies in its first TTL (three heartbeats), whoever listens: let that pass.
      await pause(3 * PRESENCE_HEARTBEAT_MS + 200);
      heard.length = 0;
      const s = uniqueStream('alone');
      for (let i = 0; i < 5; i++) await alone.append(s, [jsonEvent('N', { i })]);
      await pause(500);
      expect(commits()).toEqual([]);

      // Another process says hello: from then on the first store's commits reach its readers.
      const other = await open();
      const f = follow(other, await other.headPosition(), (e) => e.streamId === s);
      await until('the second hello', () => new Set(hellos()).size >= 2);
      await pause(500);
      for (let i = 5; i < 8; i++) {
        await pause(50);
        await alone.append(s, [jsonEvent('N', { i })]);
        await f.until(i - 4, ARRIVAL_TIMEOUT_MS);
      }
      f.stop();
      expect(f.seen.map((e) => parseData<{ i: number }>(e).i)).toEqual([5, 6, 7]);
      expect(commits().length).toBeGreaterThan(0);
    } finally {
      await spy.end();
    }
  });

  it('a subscriber on a store without a listener is not woken by another store (the check can fail)', async () => {
    // The same two-store set-up with NOTIFY off (an unknown channel on the reader): the append must
    // not arrive, which shows the cases above could only pass through the wake-up.
    const writer = await openStore();
    const sql = openPostgres(database.url);
    handles.push(sql);
    const channel = `other_${randomUUID().slice(0, 8)}`;
    const reader = await createSqlEventStore(sql, { pollMs: NO_POLL_MS, notifyChannel: channel });
    stores.push(reader);
    const s = uniqueStream('deaf');
    const f = follow(reader, await reader.headPosition(), (e) => e.streamId === s);
    // The listener has the reader read once when it has connected: let that read pass first.
    await listening(channel);
    await pause(500);
    await writer.append(s, [jsonEvent('N', { i: 0 })]);
    await pause(1000);
    expect(f.seen).toHaveLength(0);
    f.stop();
  });
});
