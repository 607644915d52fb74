import { afterAll, describe, expect, it } from 'vitest';
import { BROKER_GROUP } from '../../../src/ingest/broker/index.ts';
import { postgresAvailable, REDIS_URL, redisAvailable, redisPrefix } from '../../support/services.ts';
import { killHard, type Service, startService, stopService } from './processes.ts';
import { embeddedStorage, postgresStorage, storedDeliveries } from './storage.ts';
import { dropStreams, entriesRead, pendingCount, produce, testRedis, waitFor } from './support.ts';

const hasRedis = await redisAvailable();
const hasPg = await postgresAvailable();

const TOTAL = 10_000;
const FIRST = 6_000;

const modes = [
  { name: 'embedded', run: hasRedis, storage: embeddedStorage },
  { name: 'PostgreSQL', run: hasRedis && hasPg, storage: postgresStorage },
];

describe.each(modes)(
  'broker: kill -9 midway, restart, nothing lost or doubled — $name',
  ({ run, storage }) => {
    const cleanups: Array<() => Promise<void>> = [];
    afterAll(async () => {
      for (const c of cleanups.reverse()) await c().catch(() => {});
    });

    it.runIf(run)(
      `${TOTAL} entries: exactly ${TOTAL} delivery events, none doubled, none left pending`,
      async () => {
        const stream = `${redisPrefix('hookline-broker')}crash`;
        const redis = testRedis(REDIS_URL);
        const store = await storage();
        let service: Service | undefined;
        cleanups.push(async () => {
          if (service) await killHard(service);
          await dropStreams(redis, [stream]);
          redis.disconnect();
          await store.cleanup();
        });
        const env = {
          ...store.env,
          HOOKLINE_BROKER_URL: REDIS_URL,
          HOOKLINE_BROKER_CHANNELS: stream,
          HOOKLINE_BROKER_CLAIM_IDLE_MS: '1000',
          HOOKLINE_LOG_LEVEL: 'info', // the 'hookline listening' line carries the URL
        };
        // Half the entries carry a delivery id of their own; the rest are known by their entry id.
        const entry = (i: number) => ({
          payload: JSON.stringify({ n: i }),
          event_type: 'crash.test',
          ...(i % 2 === 0 ? { delivery_id: `crash-${i}` } : {}),
        });

        await produce(redis, stream, FIRST, entry);
        service = await startService(env);
        await waitFor(
          'a third consumed',
          async () => (await entriesRead(redis, stream, BROKER_GROUP)) >= TOTAL / 3,
          {
            timeoutMs: 120_000,
            intervalMs: 20,
          },
        );
        await killHard(service);
        const readAtKill = await entriesRead(redis, stream, BROKER_GROUP);

        // More arrives while the service is down.
        await produce(redis, stream, TOTAL - FIRST, (i) => entry(FIRST + i));
        service = await startService(env);
        await waitFor(
          'every entry read and acknowledged',
          async () =>
            (await entriesRead(redis, stream, BROKER_GROUP)) === TOTAL &&
            (await pendingCount(redis, stream, BROKER_GROUP)) === 0,
          { timeoutMs: 240_000, intervalMs: 200 },
        );
        await stopService(service);
        service = undefined;

        const stored = await storedDeliveries(store, `broker:${stream}`);
        const numbers = stored.map((d) => (JSON.parse(d.payload.toString()) as { n: number }).n);
        expect(new Set(numbers).size).toBe(TOTAL);
        expect(stored).toHaveLength(TOTAL);
        expect(new Set(stored.map((d) => d.metadata.external_id)).size).toBe(TOTAL);
        expect(Math.min(...numbers)).toBe(0);
        expect(Math.max(...numbers)).toBe(TOTAL - 1);
        expect(await pendingCount(redis, stream, BROKER_GROUP)).toBe(0);
        // The kill landed mid-stream, not after the first half was all consumed.
        expect(readAtKill).toBeLessThan(FIRST);
      },
      400_000,
    );
  },
);
