import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProjectionHealth } from '../../../projections/engine/lag-health.ts';
import { createProjectionRunner } from '../../../projections/engine/runner.ts';
import { fixedClock } from '../../../src/clock.ts';
import { jsonEvent } from '../../../src/eventstore/codec.ts';
import { type Harness, openHarness, testLogger, trackingProjection } from '../support.ts';

describe('projection lag for /healthz', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await openHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('is an error while a read model lags past the bound, ok once it caught up', async () => {
    let last = '';
    for (let i = 0; i < 12; i++)
      last = (await h.store.append(`health-${i}`, [jsonEvent('Tested', { i })])).position;
    // The clock says the events are two minutes old: nothing has applied them yet.
    const clock = fixedClock(new Date(Date.now() + 120_000));
    const runner = createProjectionRunner({
      sql: h.sql,
      store: h.store,
      logger: testLogger,
      clock,
      projections: [trackingProjection('a', { name: 'healthy' })],
      options: { batchMs: 20 },
    });
    const health = createProjectionHealth(runner, { degradedAfterSeconds: 60 });
    try {
      await health.refresh();
      expect(health.state()).toBe('error');
      expect(health.lag()?.events).toBe(12);
      expect(health.lag()!.seconds).toBeGreaterThan(60);
      expect(health.lag()?.byProjection).toEqual([
        { name: 'healthy', events: 12, seconds: expect.any(Number) },
      ]);

      await runner.start();
      await runner.waitFor(last, { timeoutMs: 20_000 });
      await health.refresh();
      expect(health.state()).toBe('ok');
      expect(health.lag()).toEqual({
        events: 0,
        seconds: 0,
        byProjection: [{ name: 'healthy', events: 0, seconds: 0 }],
      });
    } finally {
      health.stop();
      await runner.stop();
    }
  });
});
