import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/app.ts';
import { BROKER_GROUP, startBrokerConsumers } from '../../../src/ingest/broker/index.ts';
import { createDeliveryRecorder } from '../../../src/ingest/recorder.ts';
import { createProviderDirectory, type ProviderDirectory } from '../../../src/providers/directory.ts';
import type { Runtime } from '../../../src/runtime.ts';
import { createEmbeddedRuntime } from '../../support/embedded.ts';
import { REDIS_URL, redisAvailable, redisPrefix } from '../../support/services.ts';
import { deliveriesOf, dropStreams, pendingCount, produce, testRedis, waitFor } from './support.ts';

const hasRedis = await redisAvailable();

async function runtimeFor(env: Record<string, string>): Promise<Runtime> {
  return createEmbeddedRuntime({ HOOKLINE_LOG_LEVEL: 'silent', ...env }, { startProjections: false });
}

async function health(app: FastifyInstance): Promise<{ statusCode: number; body: Record<string, unknown> }> {
  const res = await app.inject({ method: 'GET', url: '/healthz' });
  return { statusCode: res.statusCode, body: res.json() };
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe.runIf(hasRedis)('broker provider disabled, and /healthz', () => {
  const channel = `${redisPrefix('hookline-broker')}toggle`;
  const provider = `broker:${channel}`;
  let redis: Redis;
  let runtime: Runtime;
  let app: FastifyInstance;
  let providers: ProviderDirectory;

  beforeAll(async () => {
    redis = testRedis(REDIS_URL);
    runtime = await runtimeFor({ HOOKLINE_BROKER_URL: REDIS_URL, HOOKLINE_BROKER_CHANNELS: channel });
    providers = createProviderDirectory({
      store: runtime.store,
      config: runtime.config,
      clock: runtime.clock,
    });
    const recorder = createDeliveryRecorder({ store: runtime.store, clock: runtime.clock });
    await startBrokerConsumers(runtime, recorder, { providers, blockMs: 200 });
    app = await buildApp(runtime, { requestLogging: false });
  });

  afterAll(async () => {
    await app?.close();
    await runtime?.close();
    await dropStreams(redis, [channel]);
    redis?.disconnect();
  });

  it('reports broker ok while consuming', async () => {
    const { statusCode, body } = await waitFor('broker ok', async () => {
      const h = await health(app);
      return h.body.broker === 'ok' && h;
    });
    expect(statusCode).toBe(200);
    expect(body).toMatchObject({ status: 'ok', db: 'ok', database: 'ok', broker: 'ok' });
  });

  it('a disabled provider stops consuming and leaves the entries in the stream', async () => {
    await providers.execute({ type: 'SetProviderEnabled', name: provider, enabled: false, by: 'test' });
    const { body } = await waitFor('broker disabled', async () => {
      const h = await health(app);
      return h.body.broker === 'disabled' && h;
    });
    // Disabled by choice is not a fault: the service is not degraded.
    expect(body.status).toBe('ok');

    await produce(redis, channel, 20, (i) => ({ payload: `{"i":${i}}`, delivery_id: `t-${i}` }));
    // Give a consumer that wrongly kept reading several poll periods to do so.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await deliveriesOf(runtime.store, provider)).toHaveLength(0);
    expect(await redis.xlen(channel)).toBe(20);
    // Not even read into a pending list: the group has delivered nothing.
    expect(await pendingCount(redis, channel, BROKER_GROUP)).toBe(0);
    const [info] = (await redis.xinfo('GROUPS', channel)) as unknown[][];
    const fields = new Map<string, unknown>();
    for (let i = 0; i + 1 < info!.length; i += 2) fields.set(String(info![i]), info![i + 1]);
    expect(fields.get('entries-read') ?? 0).toBe(0);

    await providers.execute({ type: 'SetProviderEnabled', name: provider, enabled: true, by: 'test' });
    const stored = await waitFor('20 deliveries after enabling', async () => {
      const d = await deliveriesOf(runtime.store, provider);
      return d.length === 20 && d;
    });
    expect(stored.map((d) => d.metadata.external_id)).toEqual(Array.from({ length: 20 }, (_, i) => `t-${i}`));
    await waitFor('nothing pending', async () => (await pendingCount(redis, channel, BROKER_GROUP)) === 0);
    expect((await health(app)).body.broker).toBe('ok');
  });
});

describe.runIf(hasRedis)('/healthz when the broker is unreachable or absent', () => {
  let runtime: Runtime | undefined;
  let app: FastifyInstance | undefined;

  afterAll(async () => {
    await app?.close();
    await runtime?.close();
  });

  it('answers degraded (200) with broker error when the database is fine but Redis is not', async () => {
    const port = await closedPort();
    runtime = await runtimeFor({
      HOOKLINE_BROKER_URL: `redis://127.0.0.1:${port}`,
      HOOKLINE_BROKER_CHANNELS: 'nowhere',
    });
    await startBrokerConsumers(
      runtime,
      createDeliveryRecorder({ store: runtime.store, clock: runtime.clock }),
    );
    app = await buildApp(runtime, { requestLogging: false });
    const { statusCode, body } = await health(app);
    expect(statusCode).toBe(200);
    expect(body).toMatchObject({ status: 'degraded', db: 'ok', database: 'ok', broker: 'error' });
  });

  it('says broker disabled, status ok, when no broker is configured (spec 2.7)', async () => {
    const plain = await runtimeFor({});
    try {
      expect(
        await startBrokerConsumers(plain, createDeliveryRecorder({ store: plain.store, clock: plain.clock })),
      ).toBe(undefined);
      const plainApp = await buildApp(plain, { requestLogging: false });
      const { body } = await health(plainApp);
      expect(body).toMatchObject({ status: 'ok', broker: 'disabled' });
      await plainApp.close();
    } finally {
      await plain.close();
    }
  });
});
