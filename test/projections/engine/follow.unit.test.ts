import { setTimeout as sleep } from 'node:timers/promises';
import { Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { followLive, type LiveBatching, nextWindow } from '../../../projections/engine/follow.ts';
import type { RecordedEvent } from '../../../src/eventstore/port.ts';

const event = (n: number): RecordedEvent => ({
  id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
  streamId: 'load-1',
  revision: BigInt(n),
  position: String(n + 1),
  type: 'Loaded',
  data: new Uint8Array(),
  metadata: new Uint8Array(),
  contentType: 'application/json',
  createdAt: new Date(0),
});

const batching: LiveBatching = {
  batchMs: 5,
  batchMaxMs: 40,
  busyEvents: 10,
  batchSize: 10,
  maxBuffered: 1000,
};

describe('the live window', () => {
  it('doubles after each busy batch up to the maximum, and falls back at once after a quiet one', () => {
    expect(nextWindow(5, 10, batching)).toBe(10);
    expect(nextWindow(10, 25, batching)).toBe(20);
    expect(nextWindow(20, 10, batching)).toBe(40);
    expect(nextWindow(40, 500, batching)).toBe(40);
    expect(nextWindow(40, 9, batching)).toBe(5);
    expect(nextWindow(40, 0, batching)).toBe(5);
  });

  it('never grows for a projection whose maximum is its window', () => {
    expect(nextWindow(5, 500, { ...batching, batchMaxMs: 5 })).toBe(5);
  });
});

describe('followLive', () => {
  it('applies what arrived during a slow batch as one batch after it, at most batchSize events a transaction', async () => {
    const source = new Subject<RecordedEvent>();
    const ctl = new AbortController();
    const batches: number[][] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const done = followLive({
      source,
      signal: ctl.signal,
      options: { ...batching, batchMaxMs: 5 },
      apply: async (batch) => {
        batches.push(batch.map((e) => Number(e.revision)));
        if (batches.length === 1) await held; // the first batch commits slowly
        return batch.length;
      },
      pendingCheckpoint: () => false,
      tick: async () => {},
    });
    source.next(event(0));
    while (batches.length === 0) await sleep(2);
    // Over several windows while the first batch is in flight: 13 events, in four bursts.
    for (let n = 1; n <= 13; n++) {
      source.next(event(n));
      if (n % 4 === 0) await sleep(15);
    }
    release();
    while (batches.flat().length < 14) await sleep(2);
    ctl.abort();
    expect(await done).toBe('aborted');
    // Not one batch per window: the 13 in order, split only by batchSize.
    expect(batches).toEqual([[0], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [11, 12, 13]]);
  });

  it('ends with the source, after the batch in flight has committed', async () => {
    const source = new Subject<RecordedEvent>();
    const applied: number[] = [];
    const done = followLive({
      source,
      signal: new AbortController().signal,
      options: batching,
      apply: async (batch) => {
        await sleep(10);
        for (const e of batch) applied.push(Number(e.revision));
        return batch.length;
      },
      pendingCheckpoint: () => false,
      tick: async () => {},
    });
    for (let n = 0; n < 3; n++) source.next(event(n));
    source.complete();
    expect(await done).toBe('completed');
    expect(applied).toEqual([0, 1, 2]);
  });

  it('sets no timer once idle: a quiet spell closes no windows, and the next event opens one', async () => {
    const source = new Subject<RecordedEvent>();
    const ctl = new AbortController();
    const batches: number[][] = [];
    // Asked once for every window that closes empty (and when one opens after it).
    let asked = 0;
    const done = followLive({
      source,
      signal: ctl.signal,
      options: batching,
      apply: async (batch) => {
        batches.push(batch.map((e) => Number(e.revision)));
        return batch.length;
      },
      pendingCheckpoint: () => {
        asked++;
        return false;
      },
      tick: async () => {},
    });
    source.next(event(0));
    while (batches.length === 0) await sleep(2);
    await sleep(20); // the window after the batch closes empty: idle from then on
    const before = asked;
    await sleep(100); // twenty windows of 5 ms, had they kept ticking
    expect(asked - before).toBe(0);
    source.next(event(1));
    while (batches.length < 2) await sleep(2);
    ctl.abort();
    expect(await done).toBe('aborted');
    expect(batches).toEqual([[0], [1]]);
  });

  it('keeps ticking while a lazily kept checkpoint waits, and stops once it is written', async () => {
    const source = new Subject<RecordedEvent>();
    const ctl = new AbortController();
    let pending = true;
    let ticks = 0;
    const done = followLive({
      source,
      signal: ctl.signal,
      options: batching,
      apply: async (batch) => batch.length,
      pendingCheckpoint: () => pending,
      tick: async () => {
        ticks++;
        if (ticks === 3) pending = false; // written at the third idle tick
      },
    });
    while (ticks < 3) await sleep(2);
    await sleep(60);
    ctl.abort();
    expect(await done).toBe('aborted');
    expect(ticks).toBe(3);
  });
});
