import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { expect, it } from 'vitest';
import { jsonEvent, parseData } from '../../src/eventstore/codec.ts';
import { type EventStore, StoreUnavailableError } from '../../src/eventstore/port.ts';
import { expectAscending, follow, ids, type SuiteContext, toArray, uniqueStream } from './helpers.ts';

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
