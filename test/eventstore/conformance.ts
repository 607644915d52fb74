import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonEvent, parseData } from '../../src/eventstore/codec.ts';
import {
  type EventStore,
  START,
  StoreUnavailableError,
  StreamNotFoundError,
  WrongExpectedVersionError,
} from '../../src/eventstore/port.ts';
import { registerConcurrencyCases } from './conformance-concurrency.ts';
import { registerPostgresCases } from './conformance-postgres.ts';
import {
  bin,
  type ConformanceHarness,
  type ConformanceTarget,
  expectAscending,
  expectBytes,
  follow,
  ids,
  randomPayload,
  toArray,
  uniqueStream,
  visible,
  waitFor,
} from './helpers.ts';

export type { ConformanceHarness, ConformanceTarget } from './helpers.ts';

/**
 * The one event store conformance suite (issue 2, point 4). Each adapter's int test file calls
 * this with a target; every case runs in embedded mode and on PostgreSQL, and against EventStoreDB when
 * a server is given. Streams are uniquely named, so a shared server's other data does not matter.
 */
export function describeEventStoreConformance(target: ConformanceTarget): void {
  describe(`event store conformance: ${target.name}`, () => {
    let harness: ConformanceHarness;
    let store: EventStore;
    const ctx = {
      get harness() {
        return harness;
      },
      get store() {
        return store;
      },
    };

    beforeAll(async () => {
      harness = await target.setup();
      store = await harness.open();
    });
    afterAll(async () => {
      await harness?.teardown();
    });

    it('appends with 0-based revisions and reads the stream back', async () => {
      const s = uniqueStream('basic');
      const r = await store.append(s, [jsonEvent('Opened', { n: 1 }), jsonEvent('Noted', { n: 2 })]);
      expect(r.nextExpectedRevision).toBe(1n);
      const events = await toArray(store.readStream(s));
      expect(events.map((e) => [e.revision, e.type, e.streamId, e.contentType])).toEqual([
        [0n, 'Opened', s, 'application/json'],
        [1n, 'Noted', s, 'application/json'],
      ]);
      expect(parseData(events[1]!)).toEqual({ n: 2 });
      expect(events[1]!.position).toBe(r.position);
      expect(events[0]!.createdAt).toBeInstanceOf(Date);
      expect(await store.streamInfo(s)).toMatchObject({ revision: 1n });
    });

    it('keeps the given event id', async () => {
      const s = uniqueStream('id');
      const id = '0b5e1a3c-6f1d-4c35-9a3e-2f7e0d6c9b11';
      await store.append(s, [{ ...jsonEvent('T', {}), id }]);
      expect((await toArray(store.readStream(s)))[0]!.id).toBe(id);
    });

    it('checks the expected revision: any, no_stream, stream_exists, an exact revision', async () => {
      const s = uniqueStream('expected');
      const wrong = async (p: Promise<unknown>, expected: unknown, actual: bigint) => {
        const err = await p.then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(WrongExpectedVersionError);
        expect(err).toMatchObject({ streamId: s, expected, actual });
      };
      await wrong(
        store.append(s, [jsonEvent('A', {})], { expectedRevision: 'stream_exists' }),
        'stream_exists',
        -1n,
      );
      await wrong(store.append(s, [jsonEvent('A', {})], { expectedRevision: 0n }), 0n, -1n);
      expect(
        (await store.append(s, [jsonEvent('A', {})], { expectedRevision: 'no_stream' })).nextExpectedRevision,
      ).toBe(0n);
      await wrong(store.append(s, [jsonEvent('A', {})], { expectedRevision: 'no_stream' }), 'no_stream', 0n);
      expect(
        (await store.append(s, [jsonEvent('B', {})], { expectedRevision: 'stream_exists' }))
          .nextExpectedRevision,
      ).toBe(1n);
      await wrong(store.append(s, [jsonEvent('C', {})], { expectedRevision: 0n }), 0n, 1n);
      expect(
        (await store.append(s, [jsonEvent('C', {})], { expectedRevision: 1n })).nextExpectedRevision,
      ).toBe(2n);
      expect(
        (await store.append(s, [jsonEvent('D', {})], { expectedRevision: 'any' })).nextExpectedRevision,
      ).toBe(3n);
      expect((await toArray(store.readStream(s))).map((e) => e.type)).toEqual(['A', 'B', 'C', 'D']);
    });

    it('reads a stream forwards and backwards, from a revision, bounded by maxCount', async () => {
      const s = uniqueStream('read');
      await store.append(
        s,
        Array.from({ length: 10 }, (_, i) => jsonEvent('N', { i })),
      );
      const revs = async (o: Parameters<EventStore['readStream']>[1]) =>
        (await toArray(store.readStream(s, o))).map((e) => Number(e.revision));
      expect(await revs({})).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(await revs({ direction: 'backwards' })).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
      expect(await revs({ fromRevision: 6n })).toEqual([6, 7, 8, 9]);
      expect(await revs({ direction: 'backwards', fromRevision: 3n })).toEqual([3, 2, 1, 0]);
      expect(await revs({ maxCount: 3 })).toEqual([0, 1, 2]);
      expect(await revs({ direction: 'backwards', maxCount: 2 })).toEqual([9, 8]);
      expect(await revs({ fromRevision: 20n })).toEqual([]);
      await expect(toArray(store.readStream(uniqueStream('missing')))).rejects.toBeInstanceOf(
        StreamNotFoundError,
      );
    });

    it('reads one event by stream and revision; undefined for a revision or stream it does not hold', async () => {
      const s = uniqueStream('one');
      const appended = await store.append(
        s,
        Array.from({ length: 3 }, (_, i) => jsonEvent('N', { i })),
      );
      const one = await store.readEvent(s, 1n);
      expect(one).toMatchObject({ streamId: s, revision: 1n, type: 'N' });
      expect(JSON.parse(new TextDecoder().decode(one!.data))).toEqual({ i: 1 });
      const [listed] = await toArray(store.readStream(s, { fromRevision: 1n, maxCount: 1 }));
      expect(one).toEqual(listed);
      expect((await store.readEvent(s, 2n))?.position).toBe(appended.position);
      expect(await store.readEvent(s, 3n)).toBeUndefined();
      expect(await store.readEvent(s, -1n)).toBeUndefined();
      expect(await store.readEvent(uniqueStream('missing'), 0n)).toBeUndefined();
    });

    it('returns payloads that are not UTF-8 byte for byte, in data and metadata', async () => {
      const s = uniqueStream('bytes');
      const start = await store.headPosition();
      const data = new Uint8Array([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x80, 0xed, 0xa0, 0x80, 0x00]);
      const metadata = new Uint8Array([0x00, 0xc0, 0xaf, 0xf5, 0xff]);
      const f = follow(store, start, (e) => e.streamId === s);
      const r = await store.append(s, [bin(data, 'Raw', metadata), bin(new Uint8Array(0), 'Empty')]);
      await visible(store, r.position);
      const [read, empty] = await toArray(store.readStream(s));
      expectBytes(read!.data, data);
      expectBytes(read!.metadata, metadata);
      expect(read!.contentType).toBe('application/octet-stream');
      expect(empty!.data.byteLength).toBe(0);
      const all = (await toArray(store.readAll({ after: start }))).filter((e) => e.streamId === s);
      expectBytes(all[0]!.data, data);
      const [live] = await f.until(2);
      f.stop();
      expectBytes(live!.data, data);
      expectBytes(live!.metadata, metadata);
    });

    it('stores 1 MB payloads', async () => {
      const s = uniqueStream('mb');
      const payloads = [
        randomPayload(1024 * 1024),
        randomPayload(1024 * 1024),
        randomPayload(1024 * 1024 + 17),
      ];
      await store.append(s, [bin(payloads[0]!), bin(payloads[1]!)]);
      await store.append(s, [bin(payloads[2]!)], { expectedRevision: 1n });
      const events = await toArray(store.readStream(s));
      expect(events).toHaveLength(3);
      for (const [i, e] of events.entries()) expectBytes(e.data, payloads[i]!);
    });

    it.runIf(target.kind !== 'eventstoredb')(
      'appends an event of 6 MiB (above the default body limit)',
      async () => {
        const s = uniqueStream('big');
        const payload = randomPayload(6 * 1024 * 1024);
        await store.append(s, [bin(payload)]);
        const [e] = await toArray(store.readStream(s));
        expectBytes(e!.data, payload);
      },
    );

    it('resumes from any position: readAll and subscribeAll after position N yield exactly the tail', async () => {
      const prefix = uniqueStream('resume');
      const start = await store.headPosition();
      let last = START;
      for (let i = 0; i < 25; i++)
        last = (await store.append(`${prefix}-${i % 3}`, [jsonEvent('R', { i })])).position;
      await visible(store, last);
      const mine = (e: { streamId: string }) => e.streamId.startsWith(`${prefix}-`);
      const log = (await toArray(store.readAll({ after: start }))).filter(mine);
      expect(log.map((e) => parseData<{ i: number }>(e).i)).toEqual(Array.from({ length: 25 }, (_, i) => i));
      expectAscending(store, log);
      for (const n of [0, 1, 12, 23]) {
        const after = log[n]!.position;
        const tail = (await toArray(store.readAll({ after }))).filter(mine);
        expect(ids(tail)).toEqual(ids(log.slice(n + 1)));
        const f = follow(store, after, mine);
        const seen = await f.until(24 - n);
        f.stop();
        expect(ids(seen)).toEqual(ids(log.slice(n + 1)));
      }
      // After the last one: nothing old, then the next append.
      const f = follow(store, log[24]!.position, mine);
      const next = await store.append(`${prefix}-0`, [jsonEvent('R', { i: 25 })]);
      const seen = await f.until(1);
      await visible(store, next.position);
      f.stop();
      expect(seen.map((e) => parseData<{ i: number }>(e).i)).toEqual([25]);
      expect(ids((await toArray(store.readAll({ after: log[24]!.position }))).filter(mine))).toEqual(
        ids(seen),
      );
    });

    it('orders positions: START first, headPosition at the newest event', async () => {
      const s = uniqueStream('pos');
      const a = await store.append(s, [jsonEvent('P', {})]);
      const b = await store.append(s, [jsonEvent('P', {})]);
      expect(store.comparePositions(START, a.position)).toBeLessThan(0);
      expect(store.comparePositions(a.position, b.position)).toBeLessThan(0);
      expect(store.comparePositions(b.position, a.position)).toBeGreaterThan(0);
      expect(store.comparePositions(b.position, b.position)).toBe(0);
      // Committed is enough, visible or not: the append has returned.
      expect(store.comparePositions(await store.committedPosition(), b.position)).toBeGreaterThanOrEqual(0);
      await visible(store, b.position);
      expect(store.comparePositions(await store.headPosition(), b.position)).toBeGreaterThanOrEqual(0);
      expect(await toArray(store.readAll({ after: await store.headPosition() }))).toEqual([]);
    });

    it('narrows a subscription with a filter', async () => {
      const s = uniqueStream('filter');
      const start = await store.headPosition();
      const seen: string[] = [];
      const sub = store
        .subscribeAll({ after: start, filter: (e) => e.streamId === s && e.type !== 'Drop' })
        .subscribe((e) => seen.push(e.type));
      await store.append(s, [
        jsonEvent('Drop', {}),
        jsonEvent('Keep', {}),
        jsonEvent('Drop', {}),
        jsonEvent('Keep', {}),
      ]);
      await store.append(s, [jsonEvent('End', {})]);
      await waitFor('the last event', () => seen.includes('End'));
      sub.unsubscribe();
      expect(seen).toEqual(['Keep', 'Keep', 'End']);
    });

    it('refuses a position it did not make, and a failing filter ends only its own subscription', async () => {
      await expect(toArray(store.readAll({ after: 'not-a-position' }))).rejects.toBeInstanceOf(TypeError);
      const refused = await new Promise<unknown>((resolve) => {
        store
          .subscribeAll({ after: 'not-a-position' })
          .subscribe({ error: resolve, complete: () => resolve('completed') });
      });
      expect(refused).toBeInstanceOf(TypeError);

      const s = uniqueStream('throwing');
      const start = await store.headPosition();
      const failed = new Promise<unknown>((resolve) => {
        store
          .subscribeAll({
            after: start,
            filter: (e) => {
              if (e.streamId === s) throw new Error('filter failed');
              return false;
            },
          })
          .subscribe({ error: resolve });
      });
      const f = follow(store, start, (e) => e.streamId === s);
      await store.append(s, [jsonEvent('A', {})]);
      expect(await failed).toMatchObject({ message: 'filter failed' });
      await store.append(s, [jsonEvent('B', {})]);
      const seen = await f.until(2);
      f.stop();
      expect(seen.map((e) => e.type)).toEqual(['A', 'B']);
    });

    it('truncates a stream for retention', async () => {
      const s = uniqueStream('trunc');
      const start = await store.headPosition();
      const appended = await store.append(
        s,
        Array.from({ length: 10 }, (_, i) => jsonEvent('T', { i })),
      );
      await visible(store, appended.position);
      await store.truncateStream(s, 4n);
      expect(await store.streamInfo(s)).toEqual({ revision: 9n, truncateBefore: 4n });
      expect((await toArray(store.readStream(s))).map((e) => Number(e.revision))).toEqual([4, 5, 6, 7, 8, 9]);
      expect(
        (await toArray(store.readStream(s, { direction: 'backwards' }))).map((e) => Number(e.revision)),
      ).toEqual([9, 8, 7, 6, 5, 4]);
      if (target.kind !== 'eventstoredb') {
        // ESDB hides truncated events from $all only after a scavenge.
        const left = (await toArray(store.readAll({ after: start }))).filter((e) => e.streamId === s);
        expect(left.map((e) => Number(e.revision))).toEqual([4, 5, 6, 7, 8, 9]);
      }
      expect(await store.readEvent(s, 3n)).toBeUndefined();
      expect((await store.readEvent(s, 4n))?.revision).toBe(4n);
      await store.truncateStream(s, 10n);
      await expect(toArray(store.readStream(s))).rejects.toBeInstanceOf(StreamNotFoundError);
      expect(await store.readEvent(s, 9n)).toBeUndefined();
      const r = await store.append(s, [jsonEvent('T', { i: 10 })], { expectedRevision: 9n });
      expect(r.nextExpectedRevision).toBe(10n);
      expect((await toArray(store.readStream(s))).map((e) => Number(e.revision))).toEqual([10]);
    });

    it('close() flushes queued appends, completes subscriptions and refuses later appends', async () => {
      const own = await harness.open();
      const s = uniqueStream('close');
      const f = follow(own, await own.headPosition(), () => false);
      const pending = Array.from({ length: 5 }, (_, i) => own.append(s, [jsonEvent('C', { i })]));
      await own.close();
      const results = await Promise.all(pending);
      expect(results.map((r) => r.nextExpectedRevision).sort()).toEqual([0n, 1n, 2n, 3n, 4n]);
      expect(await toArray(store.readStream(s))).toHaveLength(5);
      expect(f.completed()).toBe(true);
      await expect(own.append(s, [jsonEvent('C', {})])).rejects.toBeInstanceOf(StoreUnavailableError);
    });

    registerConcurrencyCases(target, ctx);
    if (target.kind === 'postgres') registerPostgresCases(ctx);
  });
}
