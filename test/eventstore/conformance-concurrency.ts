import { expect, it } from 'vitest';
import { jsonEvent, parseData, stampedEvent } from '../../src/eventstore/codec.ts';
import { type ExpectedRevision, WrongExpectedVersionError } from '../../src/eventstore/port.ts';
import {
  type ConformanceTarget,
  expectAscending,
  follow,
  ids,
  randomPayload,
  type SuiteContext,
  settle,
  toArray,
  uniqueStream,
  visible,
  waitFor,
} from './helpers.ts';

/** Concurrency: racing writers, many writers under a live subscriber, group commit isolation. */
export function registerConcurrencyCases(target: ConformanceTarget, ctx: SuiteContext): void {
  it('racing appenders on one stream, from two store instances: exactly one wins each revision', async () => {
    const { store } = ctx;
    const other = await ctx.harness.open();
    const s = uniqueStream('race');
    const winners: string[] = [];
    for (let revision = -1n; revision < 5n; revision++) {
      const expected: ExpectedRevision = revision < 0n ? 'no_stream' : revision;
      const racers = Array.from({ length: 8 }, (_, i) =>
        settle(
          (i % 2 ? other : store).append(s, [jsonEvent('Won', { revision: String(revision), i })], {
            expectedRevision: expected,
          }),
        ),
      );
      const outcomes = await Promise.all(racers);
      const won = outcomes.filter((o) => o.ok);
      expect(won).toHaveLength(1);
      for (const o of outcomes) {
        if (o.ok) {
          expect(o.value.nextExpectedRevision).toBe(revision + 1n);
          continue;
        }
        expect(o.error).toBeInstanceOf(WrongExpectedVersionError);
        expect((o.error as WrongExpectedVersionError).actual).toBe(revision + 1n);
      }
      winners.push(String(revision));
    }
    const events = await toArray(store.readStream(s));
    expect(events.map((e) => parseData<{ revision: string }>(e).revision)).toEqual(winners);
    expect(events.map((e) => e.revision)).toEqual([0n, 1n, 2n, 3n, 4n, 5n]);
  });

  it('32 concurrent writers on different streams under a $all subscriber: each event exactly once, in the order of readAll', async () => {
    const { store } = ctx;
    const prefix = uniqueStream('w32');
    const mine = (e: { streamId: string }) => e.streamId.startsWith(`${prefix}-`);
    const start = await store.headPosition();
    const f = follow(store, start, mine);
    const rounds = 8;
    const writers = Array.from({ length: 32 }, async (_, w) => {
      const s = `${prefix}-${w}`;
      for (let r = 0; r < rounds; r++) {
        const events = Array.from({ length: 1 + (r % 2) }, (_, k) => ({
          ...jsonEvent('W', { w, r, k }),
        }));
        await store.append(s, events, { expectedRevision: r === 0 ? 'no_stream' : 'stream_exists' });
      }
    });
    await Promise.all(writers);
    const total = 32 * (rounds + rounds / 2);
    const seen = await f.until(total);
    f.stop();
    expect(seen).toHaveLength(total);
    expect(new Set(ids(seen)).size).toBe(total);
    const log = (await toArray(store.readAll({ after: start }))).filter(mine);
    expect(ids(seen)).toEqual(ids(log));
    expectAscending(store, seen);
    // Within a stream, revisions in order and without gaps.
    const byStream = new Map<string, bigint[]>();
    for (const e of seen) byStream.set(e.streamId, [...(byStream.get(e.streamId) ?? []), e.revision]);
    for (const revs of byStream.values()) expect(revs).toEqual(revs.map((_, i) => BigInt(i)));
  });

  it('a group commit in which one append has a wrong expected revision fails that append alone', async () => {
    const { store } = ctx;
    const a = uniqueStream('gc-a');
    const b = uniqueStream('gc-b');
    const c = uniqueStream('gc-c');
    await store.append(a, [jsonEvent('A0', {})]);
    await store.append(b, [jsonEvent('B0', {})]);
    // Issued in one tick: the SQL adapters put them in one batch.
    const outcomes = await Promise.all([
      settle(store.append(a, [jsonEvent('A1', {})], { expectedRevision: 0n })),
      settle(store.append(b, [jsonEvent('Bx', {})], { expectedRevision: 5n })),
      settle(
        store.append(c, [jsonEvent('C0', {}), { type: 'C1', data: randomPayload(1024) }], {
          expectedRevision: 'no_stream',
        }),
      ),
      settle(store.append(a, [jsonEvent('A2', {})], { expectedRevision: 1n })),
      settle(store.append(a, [jsonEvent('Ax', {})], { expectedRevision: 1n })),
      settle(store.append(b, [jsonEvent('B1', {})], { expectedRevision: 0n })),
      settle(store.append(a, [], { expectedRevision: 2n })),
    ]);
    expect(outcomes.map((o) => o.ok)).toEqual([true, false, true, true, false, true, true]);
    expect(outcomes.map((o) => (o.ok ? o.value.nextExpectedRevision : null))).toEqual([
      1n,
      null,
      1n,
      2n,
      null,
      1n,
      2n,
    ]);
    expect((outcomes[1] as { error: unknown }).error).toMatchObject({
      streamId: b,
      expected: 5n,
      actual: 0n,
    });
    expect((outcomes[4] as { error: unknown }).error).toMatchObject({
      streamId: a,
      expected: 1n,
      actual: 2n,
    });
    expect((await toArray(store.readStream(a))).map((e) => e.type)).toEqual(['A0', 'A1', 'A2']);
    expect((await toArray(store.readStream(b))).map((e) => e.type)).toEqual(['B0', 'B1']);
    expect((await toArray(store.readStream(c))).map((e) => e.type)).toEqual(['C0', 'C1']);
    if (target.kind !== 'eventstoredb') {
      // One transaction: the successful appends share the xid8 half of their positions.
      const txids = new Set(outcomes.flatMap((o) => (o.ok ? [o.value.position.split(':')[0]] : [])));
      expect(txids.size).toBe(1);
      // The empty append checks and writes nothing: its position is the stream's last event.
      expect((outcomes[6] as { value: { position: string } }).value.position).toBe(
        (outcomes[3] as { value: { position: string } }).value.position,
      );
    }
  });

  it('a stamp writes the revision another part of the same atomic append got, in one group commit with racing appends', async (test) => {
    const { store } = ctx;
    if (!store.appendAtomic) {
      expect(target.kind).toBe('eventstoredb');
      test.skip();
      return;
    }
    const log = uniqueStream('stamp-log');
    await store.append(log, [jsonEvent('Delivered', { n: 0 }), jsonEvent('Delivered', { n: 1 })]);
    const todos = Array.from({ length: 6 }, () => uniqueStream('stamp-todo'));
    // Issued in one tick: the groups share batches, and each learns its log revision only there.
    const results = await Promise.all(
      todos.map((todo, i) =>
        store.appendAtomic!([
          { streamId: log, events: [jsonEvent('Delivered', { n: i + 2 })] },
          {
            streamId: todo,
            events: [
              stampedEvent(
                { type: 'Created', data: { event_id: 0, title: `t${i}`, tags: ['a'] } },
                'event_id',
                {
                  streamId: log,
                  add: 1,
                },
              ),
            ],
            options: { expectedRevision: 'no_stream' },
          },
        ]),
      ),
    );
    for (const [i, todo] of todos.entries()) {
      const [created] = await toArray(store.readStream(todo));
      const data = parseData<{ event_id: number; title: string }>(created!);
      // The log event of the same append, and nothing else: its revision + 1.
      expect(data).toEqual({
        event_id: Number(results[i]![0]!.nextExpectedRevision) + 1,
        title: `t${i}`,
        tags: ['a'],
      });
      const [delivered] = await toArray(
        store.readStream(log, { fromRevision: BigInt(data.event_id - 1), maxCount: 1 }),
      );
      expect(parseData(delivered!)).toEqual({ n: i + 2 });
    }
    // Only an atomic append may stamp, and only with a part it writes.
    const lone = stampedEvent({ type: 'Created', data: { event_id: 0 } }, 'event_id', {
      streamId: log,
      add: 1,
    });
    await expect(store.append(uniqueStream('stamp-lone'), [lone])).rejects.toThrow(TypeError);
    await expect(
      store.appendAtomic([{ streamId: uniqueStream('stamp-lone'), events: [lone] }]),
    ).rejects.toThrow(/does not write/);
  });

  it('onAppended tells each committed append once, before its appender hears of it, with its bytes as stored; a refused one tells nothing', async (test) => {
    const { store } = ctx;
    if (!store.onAppended || !store.appendAtomic) {
      // The EventStoreDB adapter leaves it out (port.ts): its callers follow $all.
      expect(target.kind).toBe('eventstoredb');
      test.skip();
      return;
    }
    const log = uniqueStream('told-log');
    const todos = Array.from({ length: 4 }, () => uniqueStream('told-todo'));
    const mine = new Set([log, ...todos]);
    const told: { streamId: string; id: string; type: string; data: Uint8Array }[] = [];
    const stop = store.onAppended((streamId, events) => {
      if (!mine.has(streamId)) return; // other tests' appends on the shared store
      for (const e of events) told.push({ streamId, ...e });
    });
    /** Streams told of when their appender heard of its commit. */
    const toldFirst: boolean[] = [];
    try {
      await store.append(log, [jsonEvent('Delivered', { n: 0 })]);
      // Issued in one tick: one group commit, each todo stamped with its log event's revision + 1.
      await Promise.all(
        todos.map(async (todo, i) => {
          await store.appendAtomic!([
            { streamId: log, events: [jsonEvent('Delivered', { n: i + 1 })] },
            {
              streamId: todo,
              events: [
                stampedEvent({ type: 'Created', data: { event_id: 0, i } }, 'event_id', {
                  streamId: log,
                  add: 1,
                }),
              ],
              options: { expectedRevision: 'no_stream' },
            },
          ]);
          toldFirst[i] = told.some((t) => t.streamId === todo);
        }),
      );
      // Refused (the todo exists): nothing is told.
      await expect(
        store.appendAtomic([
          { streamId: log, events: [jsonEvent('Delivered', { n: 99 })] },
          {
            streamId: todos[0]!,
            events: [jsonEvent('Created', { i: 99 })],
            options: { expectedRevision: 'no_stream' },
          },
        ]),
      ).rejects.toThrow(WrongExpectedVersionError);

      // Each append was told before its appender heard of its commit.
      expect(toldFirst).toEqual(todos.map(() => true));
      const stored = [
        ...(await toArray(store.readStream(log))),
        ...(await Promise.all(todos.map(async (t) => (await toArray(store.readStream(t)))[0]!))),
      ];
      expect(stored).toHaveLength(9);
      const key = (e: { streamId: string; id: string }) => `${e.streamId} ${e.id}`;
      expect(told.map(key).sort()).toEqual(stored.map(key).sort());
      for (const e of stored) {
        const t = told.find((x) => x.id === e.id)!;
        expect(t.type).toBe(e.type);
        expect(Buffer.from(t.data).equals(Buffer.from(e.data))).toBe(true);
      }
      // The stamps as the store wrote them: each todo names its own log event.
      for (const todo of todos) {
        const created = told.find((t) => t.streamId === todo)!;
        const { event_id, i } = parseData<{ event_id: number; i: number }>(created);
        const [delivered] = await toArray(
          store.readStream(log, { fromRevision: BigInt(event_id - 1), maxCount: 1 }),
        );
        expect(parseData(delivered!)).toEqual({ n: i + 1 });
      }
    } finally {
      stop();
    }
    // Stopped: later appends are not told.
    const before = told.length;
    await store.append(log, [jsonEvent('Delivered', { n: 100 })]);
    expect(told).toHaveLength(before);
  });

  it('appendAtomic writes several streams all or none, inside a group commit with other appends', async (test) => {
    const { store } = ctx;
    if (!store.appendAtomic) {
      // EventStoreDB through @eventstore/db-client has no multi-stream transaction (port.ts).
      expect(target.kind).toBe('eventstoredb');
      test.skip();
      return;
    }
    const taken = uniqueStream('atomic-taken');
    const log = uniqueStream('atomic-log');
    const lone = uniqueStream('atomic-lone');
    await store.append(taken, [jsonEvent('Reserved', { n: 0 })]);
    const fresh = [uniqueStream('atomic-fresh'), uniqueStream('atomic-fresh')] as const;
    // Issued in one tick: on the SQL adapters one batch holds the two groups and the lone append.
    const outcomes = await Promise.all([
      settle(
        store.appendAtomic([
          {
            streamId: fresh[0],
            events: [jsonEvent('Reserved', { n: 1 })],
            options: { expectedRevision: 'no_stream' },
          },
          { streamId: log, events: [jsonEvent('Delivered', { n: 1 })] },
        ]),
      ),
      settle(
        store.appendAtomic([
          { streamId: log, events: [jsonEvent('Delivered', { n: 2 })] },
          {
            streamId: taken,
            events: [jsonEvent('Reserved', { n: 2 })],
            options: { expectedRevision: 'no_stream' },
          },
          { streamId: fresh[1], events: [jsonEvent('Reserved', { n: 2 })] },
        ]),
      ),
      settle(store.append(lone, [jsonEvent('Lone', {})], { expectedRevision: 'no_stream' })),
      settle(
        store.appendAtomic([
          { streamId: log, events: [jsonEvent('Delivered', { n: 3 })], options: { expectedRevision: 0n } },
        ]),
      ),
    ]);
    expect(outcomes.map((o) => o.ok)).toEqual([true, false, true, true]);
    const first = (outcomes[0] as { value: { nextExpectedRevision: bigint; position: string }[] }).value;
    expect(first.map((r) => r.nextExpectedRevision)).toEqual([0n, 0n]);
    expect(store.comparePositions(first[0]!.position, first[1]!.position)).toBeLessThan(0);
    // The failed group names the append whose expected revision failed, and wrote nothing at all.
    expect((outcomes[1] as { error: unknown }).error).toBeInstanceOf(WrongExpectedVersionError);
    expect((outcomes[1] as { error: unknown }).error).toMatchObject({
      streamId: taken,
      expected: 'no_stream',
      actual: 0n,
    });
    await expect(toArray(store.readStream(fresh[1]))).rejects.toThrow(/not found/);
    expect((await store.streamInfo(fresh[1])).revision).toBe(-1n);
    expect((await toArray(store.readStream(taken))).map((e) => parseData(e))).toEqual([{ n: 0 }]);
    // The group after the failed one saw the log as the first group left it (revision 0).
    expect((await toArray(store.readStream(log))).map((e) => parseData(e))).toEqual([{ n: 1 }, { n: 3 }]);
    // A stream the failed group touched first can still be created afterwards.
    await store.append(fresh[1], [jsonEvent('Reserved', { n: 4 })], { expectedRevision: 'no_stream' });
    expect((await toArray(store.readStream(fresh[1]))).map((e) => e.type)).toEqual(['Reserved']);
  });

  it('appends many events at once and keeps their order', async () => {
    const { store } = ctx;
    const s = uniqueStream('many');
    const events = Array.from({ length: 2500 }, (_, i) => jsonEvent('M', { i }));
    const [first, second] = await Promise.all([
      store.append(s, events.slice(0, 1200), { expectedRevision: 'no_stream' }),
      store.append(s, events.slice(1200), { expectedRevision: 1199n }),
    ]);
    expect(first.nextExpectedRevision).toBe(1199n);
    expect(second.nextExpectedRevision).toBe(2499n);
    const read = await toArray(store.readStream(s));
    expect(read.map((e) => parseData<{ i: number }>(e).i)).toEqual(events.map((_, i) => i));
    expect(read.map((e) => e.revision)).toEqual(events.map((_, i) => BigInt(i)));
    expectAscending(store, read);
  });

  it('subscriptions that start at different moments while writers append each see every event once', async () => {
    const { store } = ctx;
    const prefix = uniqueStream('join');
    const mine = (e: { streamId: string }) => e.streamId.startsWith(`${prefix}-`);
    const start = await store.headPosition();
    const followers = [follow(store, start, mine)];
    const positions: string[] = [];
    const writers = Array.from({ length: 16 }, async (_, w) => {
      for (let r = 0; r < 12; r++) {
        positions.push((await store.append(`${prefix}-${w}`, [jsonEvent('J', { w, r })])).position);
        // Join while appends are in flight: from the beginning, from a recent position, from the head.
        if (r % 4 === 1 && w % 4 === 0) followers.push(follow(store, start, mine));
        if (r % 4 === 2 && w % 4 === 1) followers.push(follow(store, positions.at(-1)!, mine));
        if (r % 4 === 3 && w % 4 === 2) followers.push(follow(store, await store.headPosition(), mine));
      }
    });
    await Promise.all(writers);
    const total = 16 * 12;
    const log = await followers[0]!.until(total);
    expect(new Set(ids(log)).size).toBe(total);
    for (const f of followers.slice(1)) {
      // Each ends with the same events as the log, from wherever it started, without gap or repeat.
      const seen = [...f.seen];
      f.stop();
      const from = seen.length === 0 ? log.length : log.findIndex((e) => e.id === seen[0]!.id);
      expect(from).toBeGreaterThanOrEqual(0);
      expect(ids(seen)).toEqual(ids(log.slice(from)));
    }
    followers[0]!.stop();
    await visible(store, log.at(-1)!.position);
    expect(ids(log)).toEqual(ids((await toArray(store.readAll({ after: start }))).filter(mine)));
  });

  it('subscriptions from the head get a lone append with nothing after it, however their start races the append', async () => {
    // A subscription's catch-up and the shared live reader are separate reads: an append that
    // committed between the two was behind the reader's position and ahead of the subscription's,
    // and with no later append to reveal the gap the subscription waited for ever. Both ways in:
    // subscriptions that start the reader, and ones that join it running; several at once, racing
    // the append, so that some of them read before its commit and some after.
    const { store } = ctx;
    for (let round = 0; round < 16; round++) {
      const s = uniqueStream('lone');
      const head = await store.headPosition();
      const followers = Array.from({ length: 6 }, () => follow(store, head, (e) => e.streamId === s));
      await store.append(s, [jsonEvent('Lone', { round })]);
      followers.push(follow(store, head, (e) => e.streamId === s));
      await waitFor(
        `the lone append of round ${round} at every subscription`,
        () => followers.every((f) => f.seen.length === 1),
        10_000,
      );
      for (const f of followers) f.stop();
      // Every other round, let the live reader stop, so that the next round starts it again.
      if (round % 2 === 0) await new Promise((r) => setTimeout(r, 300));
    }
  });

  it.runIf(target.kind !== 'eventstoredb')(
    'a subscription from a position beyond the log disturbs no other',
    async () => {
      const { store } = ctx;
      const s = uniqueStream('beyond');
      const far = store.subscribeAll({ after: '9999999999:9999999999' }).subscribe();
      const f = follow(store, await store.headPosition(), (e) => e.streamId === s);
      await store.append(s, [jsonEvent('B', {})]);
      const seen = await f.until(1);
      f.stop();
      far.unsubscribe();
      expect(seen).toHaveLength(1);
    },
  );
}
