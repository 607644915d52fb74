import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { BROKER_GROUP } from '../../../src/ingest/broker/index.ts';
import { postgresAvailable } from '../../support/services.ts';
import {
  type Child,
  freePort,
  killHard,
  type Service,
  startRedis,
  startService,
  stopService,
} from './processes.ts';
import { embeddedStorage, postgresStorage, type Storage, storedDeliveries } from './storage.ts';
import { entriesRead, pendingCount, produce, testRedis, waitFor } from './support.ts';

const hasPg = await postgresAvailable();
const hasRedisServer = await import('node:child_process').then(
  ({ spawnSync }) => spawnSync('redis-server', ['--version']).status === 0,
);

const BEFORE = 2_000;
const AFTER = 500;

/**
 * Its own redis-server (append-only file, every write fsynced, in a temporary directory): the
 * machine's Redis keeps nothing on disk, so a restart of it would prove nothing.
 */
describe.runIf(hasRedisServer)('broker: Redis killed and restarted midway', () => {
  let redisDir = '';
  let redisServer: Child | undefined;
  let service: Service | undefined;
  let storage: Storage | undefined;
  let client: Redis | undefined;

  afterAll(async () => {
    if (service) await killHard(service);
    client?.disconnect();
    if (redisServer) await killHard(redisServer);
    await storage?.cleanup();
    if (redisDir) await rm(redisDir, { recursive: true, force: true });
  });

  it('consumption resumes by itself; every entry stored once; health error then ok', async () => {
    redisDir = await mkdtemp(path.join(os.tmpdir(), 'hookline-redis-'));
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const stream = 'orders';
    redisServer = await startRedis(port, redisDir);
    client = testRedis(url);
    storage = hasPg ? await postgresStorage() : await embeddedStorage();
    const health = async () => {
      const res = await fetch(`${service!.url}/healthz`);
      return (await res.json()) as Record<string, unknown>;
    };

    await produce(client, stream, BEFORE, (i) => ({ payload: JSON.stringify({ n: i }) }));
    service = await startService({
      ...storage.env,
      HOOKLINE_BROKER_URL: url,
      HOOKLINE_BROKER_CHANNELS: stream,
      HOOKLINE_BROKER_CLAIM_IDLE_MS: '1000',
      HOOKLINE_LOG_LEVEL: 'info',
    });
    await waitFor(
      'some consumed',
      async () => (await entriesRead(client!, stream, BROKER_GROUP)) >= BEFORE / 4,
      {
        timeoutMs: 60_000,
        intervalMs: 20,
      },
    );

    await killHard(redisServer);
    const down = await waitFor('broker error', async () => {
      const h = await health();
      return h.broker === 'error' && h;
    });
    expect(down.status).toBe('degraded');
    expect(down.db).toBe('ok');

    redisServer = await startRedis(port, redisDir);
    await waitFor('broker ok again', async () => (await health()).broker === 'ok', { timeoutMs: 30_000 });
    // The client reconnects on its own too; new entries after the restart are consumed as well.
    await produce(client, stream, AFTER, (i) => ({ payload: JSON.stringify({ n: BEFORE + i }) }));
    await waitFor(
      'every entry read and acknowledged',
      async () =>
        (await entriesRead(client!, stream, BROKER_GROUP)) === BEFORE + AFTER &&
        (await pendingCount(client!, stream, BROKER_GROUP)) === 0,
      { timeoutMs: 120_000, intervalMs: 200 },
    );
    expect((await health()).status).toBe('ok');
    await stopService(service);
    service = undefined;

    const stored = await storedDeliveries(storage, `broker:${stream}`);
    const numbers = new Set(stored.map((d) => (JSON.parse(d.payload.toString()) as { n: number }).n));
    expect(stored).toHaveLength(BEFORE + AFTER);
    expect(numbers.size).toBe(BEFORE + AFTER);
  }, 300_000);
});
