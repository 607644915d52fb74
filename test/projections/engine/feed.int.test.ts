import { firstValueFrom, take, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLiveFeed, FeedAheadError } from '../../../projections/engine/feed.ts';
import { positionOrder } from '../../../projections/engine/rebuild.ts';
import { jsonEvent } from '../../../src/eventstore/codec.ts';
import { type Harness, openHarness, waitUntil } from '../support.ts';

describe('the shared live feed', () => {
  let h: Harness;
  const positions: string[] = [];
  beforeAll(async () => {
    h = await openHarness();
    for (let i = 0; i < 6; i++)
      positions.push((await h.store.append(`feed-${i}`, [jsonEvent('Tested', { i })])).position);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('serves followers at or ahead of it from one subscription, and sends one behind it to read', async () => {
    const feed = createLiveFeed(h.store, positionOrder(h.store));
    const first = feed.follow('start').pipe(take(6), toArray());
    const all = await firstValueFrom(first);
    expect(all.map((e) => e.position)).toEqual(positions);

    // A follower holds the feed open from the start; another joins ahead and skips what it has.
    const seen: string[] = [];
    const holder = feed.follow('start').subscribe((e) => seen.push(e.position));
    try {
      const ahead = firstValueFrom(feed.follow(positions[3]!).pipe(take(2), toArray()));
      await waitUntil(() => seen.length === 6, 'the feed to hand on every event');
      // The feed keeps no history: a follower at an earlier position must read first.
      const behind = await firstValueFrom(feed.follow(positions[1]!)).catch((e: unknown) => e);
      expect(behind).toBeInstanceOf(FeedAheadError);
      expect((await ahead).map((e) => e.position)).toEqual(positions.slice(4));
    } finally {
      holder.unsubscribe();
    }
  });
});
