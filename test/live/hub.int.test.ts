import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLive } from '../../src/live/index.ts';
import type { StatusSnapshot } from '../../src/live/status.ts';
import type { LiveDelivery } from '../../src/live/summary.ts';
import { seedDeliveries } from '../http/ui/seed.ts';
import { startTestServer, type TestServer, until } from '../http/ui/support.ts';

describe('live hub', () => {
  let s: TestServer;

  beforeAll(async () => {
    s = await startTestServer();
  });

  afterAll(async () => {
    await s?.close();
  });

  it('moves idle -> receiving on a delivery and back to idle after the activity window, with a status each time', async () => {
    const live = createLive(s.runtime, { activityWindowMs: 600, heartbeatMs: 60_000 });
    const statuses: StatusSnapshot[] = [];
    const deliveries: LiveDelivery[] = [];
    live.hub.status$.subscribe((x) => statuses.push(x));
    live.hub.deliveries$.subscribe((d) => deliveries.push(d));
    await live.hub.start();
    try {
      expect(live.hub.connection()).toBe('idle');
      const [id] = await seedDeliveries(s.runtime, [{ provider: 'codehost', event_type: 'push' }]);
      await until(() => statuses.find((x) => x.connection === 'receiving'));
      expect(live.hub.connection()).toBe('receiving');
      expect(deliveries.map((d) => d.summary.id)).toEqual([id]);
      const receiving = statuses.find((x) => x.connection === 'receiving')!;
      // The snapshot of the transition already counts the delivery that caused it.
      expect(receiving.providers.find((p) => p.name === 'codehost')?.last_event_at).not.toBeNull();
      await until(() => statuses.find((x) => x.connection === 'idle'));
      expect(live.hub.connection()).toBe('idle');
      expect(statuses.map((x) => x.connection)).toEqual(['receiving', 'idle']);
    } finally {
      await live.hub.stop();
    }
  });

  it('sends a status on every heartbeat', async () => {
    const live = createLive(s.runtime, { activityWindowMs: 60_000, heartbeatMs: 150 });
    const statuses: StatusSnapshot[] = [];
    live.hub.status$.subscribe((x) => statuses.push(x));
    await live.hub.start();
    try {
      await until(() => statuses.length >= 3 || undefined);
      for (const x of statuses) {
        expect(Date.parse(x.generated_at)).not.toBeNaN();
        expect(x.providers.length).toBeGreaterThan(0);
      }
    } finally {
      await live.hub.stop();
    }
  });

  it('starts receiving when the newest delivery is within the window', async () => {
    await seedDeliveries(s.runtime, [{ provider: 'codehost' }]);
    const live = createLive(s.runtime, { activityWindowMs: 30_000, heartbeatMs: 60_000 });
    await live.hub.start();
    try {
      expect(live.hub.connection()).toBe('receiving');
      expect((await live.hub.status()).connection).toBe('receiving');
    } finally {
      await live.hub.stop();
    }
  });

  it('replays at most the bound, else asks for a reset', async () => {
    const live = createLive(s.runtime);
    const before = await s.runtime.store.committedPosition();
    const ids = await seedDeliveries(s.runtime, [{}, {}, {}]);
    const replay = await live.hub.replay(before, 3);
    expect(replay.kind === 'events' && replay.events.map((e) => e.summary.id)).toEqual(ids);
    expect(await live.hub.replay(before, 2)).toEqual({ kind: 'reset', reason: 'beyond_replay_bound' });
    expect(await live.hub.replay('not-a-position', 2)).toEqual({ kind: 'reset', reason: 'unknown_position' });
  });
});
