import { Redis } from 'ioredis';
import { DELIVERIES_STREAM, type DeliveryMetadata } from '../../../src/domain/delivery/events.ts';
import { parseMetadata } from '../../../src/eventstore/codec.ts';
import type { EventStore } from '../../../src/eventstore/port.ts';

/** Polls until `check` returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  { timeoutMs = 20_000, intervalMs = 50 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface StoredDelivery {
  readonly revision: bigint;
  readonly payload: Buffer;
  readonly metadata: DeliveryMetadata;
}

/** Every `DeliveryReceived` of the given provider (all when undefined), in `$all` order. */
export async function deliveriesOf(
  store: EventStore,
  provider: string | undefined,
): Promise<StoredDelivery[]> {
  const out: StoredDelivery[] = [];
  for await (const e of store.readAll()) {
    if (e.streamId !== DELIVERIES_STREAM || e.type !== 'DeliveryReceived') continue;
    const metadata = parseMetadata<DeliveryMetadata>(e);
    if (!metadata || (provider !== undefined && metadata.provider !== provider)) continue;
    out.push({ revision: e.revision, payload: Buffer.from(e.data), metadata });
  }
  return out;
}

/** Number of entries of the group still pending (XPENDING summary). */
export async function pendingCount(redis: Redis, stream: string, group: string): Promise<number> {
  const summary = (await redis.xpending(stream, group)) as [number, ...unknown[]];
  return Number(summary[0]);
}

/** Adds entries in pipelines of 500; each entry gets `payload` and `delivery_id` from `make`. */
export async function produce(
  redis: Redis,
  stream: string,
  count: number,
  make: (i: number) => Record<string, string | Buffer>,
): Promise<void> {
  for (let start = 0; start < count; start += 500) {
    const pipeline = redis.pipeline();
    for (let i = start; i < Math.min(count, start + 500); i++) {
      pipeline.xadd(stream, '*', ...Object.entries(make(i)).flat());
    }
    const results = await pipeline.exec();
    const failed = results?.find(([err]) => err);
    if (failed) throw failed[0];
  }
}

export function testRedis(url: string): Redis {
  const redis = new Redis(url, { protocol: 2, maxRetriesPerRequest: 3 });
  redis.on('error', () => {}); // a test that restarts Redis sees refused connections meanwhile
  return redis;
}

/** Removes the test's streams. */
export async function dropStreams(redis: Redis, streams: readonly string[]): Promise<void> {
  if (streams.length > 0) await redis.del(...streams);
}

/** How many entries the group has handed out (XINFO GROUPS `entries-read`). */
export async function entriesRead(redis: Redis, stream: string, group: string): Promise<number> {
  const groups = (await redis.xinfo('GROUPS', stream)) as unknown[][];
  for (const g of groups) {
    const fields = new Map<string, unknown>();
    for (let i = 0; i + 1 < g.length; i += 2) fields.set(String(g[i]), g[i + 1]);
    if (fields.get('name') === group) return Number(fields.get('entries-read') ?? 0);
  }
  return 0;
}
