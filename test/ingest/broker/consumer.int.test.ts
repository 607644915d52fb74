import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BROKER_GROUP,
  type BrokerConsumers,
  startBrokerConsumers,
} from '../../../src/ingest/broker/index.ts';
import { toBrokerDelivery } from '../../../src/ingest/broker/message.ts';
import { createDeliveryRecorder } from '../../../src/ingest/recorder.ts';
import type { Runtime } from '../../../src/runtime.ts';
import { createEmbeddedRuntime } from '../../support/embedded.ts';
import { REDIS_URL, redisAvailable, redisPrefix } from '../../support/services.ts';
import { deliveriesOf, dropStreams, pendingCount, produce, testRedis, waitFor } from './support.ts';

const hasRedis = await redisAvailable();

/** An embedded-mode runtime whose config names the given channels. */
async function brokerRuntime(
  channels: readonly string[],
  env: Record<string, string> = {},
): Promise<Runtime> {
  return createEmbeddedRuntime(
    {
      HOOKLINE_BROKER_URL: REDIS_URL,
      HOOKLINE_BROKER_CHANNELS: channels.join(','),
      HOOKLINE_BROKER_CLAIM_IDLE_MS: '300',
      HOOKLINE_LOG_LEVEL: 'silent',
      ...env,
    },
    { startProjections: false },
  );
}

describe.runIf(hasRedis)('broker consumer (Redis Streams into the log)', () => {
  const prefix = redisPrefix('hookline-broker');
  const basic = `${prefix}basic`;
  const binary = `${prefix}binary`;
  const claimed = `${prefix}claimed`;
  let redis: Redis;
  let runtime: Runtime;
  let consumers: BrokerConsumers;

  beforeAll(async () => {
    redis = testRedis(REDIS_URL);
    runtime = await brokerRuntime([basic, binary, claimed]);
    const recorder = createDeliveryRecorder({ store: runtime.store, clock: runtime.clock });

    // A consumer that died between append and XACK: it read 5 entries, appended the first one
    // to the log and acknowledged none. Done before our consumers start, so they cannot take them.
    await redis.xgroup('CREATE', claimed, BROKER_GROUP, '0', 'MKSTREAM');
    await produce(redis, claimed, 5, (i) => ({ payload: JSON.stringify({ n: i }), event_type: 'dead.test' }));
    const read = (await redis.xreadgroupBuffer(
      'GROUP',
      BROKER_GROUP,
      'dead-consumer',
      'COUNT',
      5,
      'STREAMS',
      claimed,
      '>',
    )) as Array<[Buffer, Array<[Buffer, Buffer[]]>]>;
    const [firstId, firstFields] = read[0]![1][0]!;
    await recorder.record(toBrokerDelivery(claimed, firstId.toString(), firstFields, new Date()));

    consumers = (await startBrokerConsumers(runtime, recorder, { blockMs: 200 }))!;
  });

  afterAll(async () => {
    await runtime?.close();
    await dropStreams(redis, [basic, binary, claimed]);
    redis?.disconnect();
  });

  it('appends each entry as a queue delivery with the documented fields, then acknowledges it', async () => {
    await produce(redis, basic, 3, (i) => ({
      payload: JSON.stringify({ order: i }),
      event_type: 'order.created',
      delivery_id: `order-${i}`,
      content_type: 'application/json; charset=utf-8',
    }));
    await redis.xadd(basic, '*', 'payload', 'plain');
    const stored = await waitFor('4 deliveries', async () => {
      const d = await deliveriesOf(runtime.store, `broker:${basic}`);
      return d.length === 4 && d;
    });
    expect(stored.slice(0, 3).map((d) => d.payload.toString())).toEqual(
      [0, 1, 2].map((i) => `{"order":${i}}`),
    );
    expect(stored[0]!.metadata).toMatchObject({
      provider: `broker:${basic}`,
      family: 'queue',
      trust_mode: 'queue',
      verified: false,
      verify_detail: basic,
      event_type: 'order.created',
      external_id: 'order-0',
      content_type: 'application/json; charset=utf-8',
      source_ip: null,
      payload_size: 11,
    });
    // Defaults: JSON content type, no event type, the entry id as the external id.
    const plain = stored[3]!.metadata;
    expect(plain.content_type).toBe('application/json');
    expect(plain.event_type).toBeNull();
    expect(plain.external_id).toMatch(/^\d+-\d+$/);
    expect(plain.headers['x-broker-entry-id']).toBe(plain.external_id);
    await waitFor('nothing pending', async () => (await pendingCount(redis, basic, BROKER_GROUP)) === 0);
    expect(consumers.state()).toBe('ok');
  });

  it('stores an entry whose delivery id was already recorded once', async () => {
    await redis.xadd(basic, '*', 'payload', '{"first":true}', 'delivery_id', 'same-id');
    await redis.xadd(basic, '*', 'payload', '{"again":true}', 'delivery_id', 'same-id');
    await redis.xadd(basic, '*', 'payload', '{"marker":true}', 'delivery_id', 'after-same');
    await waitFor('the marker', async () =>
      (await deliveriesOf(runtime.store, `broker:${basic}`)).some(
        (d) => d.metadata.external_id === 'after-same',
      ),
    );
    await waitFor('nothing pending', async () => (await pendingCount(redis, basic, BROKER_GROUP)) === 0);
    const same = (await deliveriesOf(runtime.store, `broker:${basic}`)).filter(
      (d) => d.metadata.external_id === 'same-id',
    );
    expect(same.map((d) => d.payload.toString())).toEqual(['{"first":true}']);
  });

  it('keeps a payload that is not UTF-8 byte for byte', async () => {
    const raw = Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x80, 0x0a, 0xe2, 0x82]);
    await redis.xadd(binary, '*', 'payload', raw, 'content_type', 'application/octet-stream');
    const [stored] = await waitFor('the binary delivery', async () => {
      const d = await deliveriesOf(runtime.store, `broker:${binary}`);
      return d.length === 1 && d;
    });
    expect(stored!.payload.equals(raw)).toBe(true);
    expect(stored!.metadata.payload_size).toBe(raw.length);
    expect(stored!.metadata.content_type).toBe('application/octet-stream');
  });

  it('claims what a dead consumer left pending and stores the one it had appended once', async () => {
    const stored = await waitFor(
      'the dead consumer’s 5 entries',
      async () => {
        const d = await deliveriesOf(runtime.store, `broker:${claimed}`);
        return d.length >= 5 && (await pendingCount(redis, claimed, BROKER_GROUP)) === 0 && d;
      },
      { timeoutMs: 30_000 },
    );
    expect(stored).toHaveLength(5);
    expect(new Set(stored.map((d) => d.metadata.external_id)).size).toBe(5);
    expect(stored.map((d) => JSON.parse(d.payload.toString()).n).sort()).toEqual([0, 1, 2, 3, 4]);
  });
});
