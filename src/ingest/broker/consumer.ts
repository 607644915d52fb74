import type { Redis } from 'ioredis';
import type { Clock } from '../../clock.ts';
import { HooklineError } from '../../errors.ts';
import type { ComponentState } from '../../health-registry.ts';
import type { Logger } from '../../logger.ts';
import { deliveriesTotal } from '../../metrics/instruments.ts';
import type { DeliveryRecorder } from '../recorder.ts';
import { type RawEntry, toBrokerDelivery } from './message.ts';

export interface ChannelConsumerOptions {
  /** A connection of its own: XREADGROUP BLOCK holds it. Created with `maxRetriesPerRequest: null`. */
  readonly redis: Redis;
  readonly channel: string;
  readonly group: string;
  readonly consumer: string;
  /** The ingestion module's recorder: appends to `deliveries`, a known external id stored once. */
  readonly recorder: Pick<DeliveryRecorder, 'record'>;
  /** Whether the provider `broker:<channel>` is enabled; asked before every read. */
  readonly isEnabled: () => boolean | Promise<boolean>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Entries older than this in another consumer's pending list are claimed (XAUTOCLAIM). */
  readonly claimIdleMs: number;
  /** A delivery larger than this is left pending (never acknowledged) and logged, like a 413. */
  readonly maxBodyBytes: number;
  readonly batchSize?: number;
  readonly blockMs?: number;
  /** While disabled, how often the state is asked again. */
  readonly disabledPollMs?: number;
}

export interface ChannelConsumer {
  readonly channel: string;
  state(): ComponentState;
  /** Finishes the batch in hand (appends and XACK), then closes the connection. */
  stop(): Promise<void>;
}

const isRedisError = (err: unknown): boolean =>
  err instanceof Error &&
  (err.name === 'ReplyError' || /Connection|ECONNREFUSED|ECONNRESET/.test(err.message));

/** Backoff for failures of our own loop (Redis replies, appends): 100 ms doubling to 5 s, with jitter. */
export function backoffMs(attempt: number): number {
  const base = Math.min(5000, 100 * 2 ** Math.min(attempt, 10));
  return Math.round(base / 2 + Math.random() * (base / 2));
}

const STOP_GRACE_MS = 5_000;

const idOf = (entry: RawEntry): string => entry[0].toString();

/**
 * Consumes one stream into the log, at least once: each entry is appended through the recorder
 * before it is acknowledged, and the recorder stores a redelivered entry once (by its delivery id).
 *
 * The loop, in priority order:
 * 1. our own pending list (after a start, an error, a reconnect or a read that raced a disable):
 *    `XREADGROUP ... STREAMS <key> <cursor>` walks it without blocking;
 * 2. every `claimIdleMs / 2`, `XAUTOCLAIM` takes entries idle longer than `claimIdleMs` from
 *    consumers that died (a `kill -9` between append and ack);
 * 3. new entries: `XREADGROUP ... BLOCK ... STREAMS <key> >`.
 */
export function startChannelConsumer(options: ChannelConsumerOptions): ChannelConsumer {
  const { redis, channel, group, consumer, recorder, clock, logger } = options;
  const batchSize = options.batchSize ?? 200;
  const blockMs = options.blockMs ?? 2000;
  const disabledPollMs = options.disabledPollMs ?? 1000;
  const claimEveryMs = Math.max(250, Math.floor(options.claimIdleMs / 2));
  const log = logger.child({ component: 'broker', channel });
  /** hookline_deliveries_total, as the receivers count their requests: provider `broker:<channel>`. */
  const provider = `broker:${channel}`;
  const count = (outcome: 'accepted' | 'too_large' | 'failed') => deliveriesTotal.inc({ provider, outcome });

  let stopped = false;
  let enabled = true;
  let loopError = false;
  let groupReady = false;
  let handling = false;
  /** Where the walk of our own pending list resumes; null when it is known to be empty. */
  let pendingCursor: string | null = '0';
  let claimCursor = '0-0';
  let nextClaimAt = 0;
  /** Entries that cannot be recorded (oversized): left pending, skipped by this process. */
  const parked = new Set<string>();
  let wake: (() => void) | undefined;
  /**
   * Rejects when stopping. Every Redis wait races it: with Redis down, a command queued for the
   * next connection would otherwise never settle, and a disconnect does not flush that queue.
   */
  let abort: (reason: Error) => void = () => {};
  const aborted = new Promise<never>((_, reject) => {
    abort = reject;
  });
  aborted.catch(() => {});
  const guard = <T>(p: Promise<T>): Promise<T> => Promise.race([p, aborted]);

  redis.on('ready', () => {
    // A read answered by the server but lost with the connection sits in our pending list.
    pendingCursor = '0';
  });

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  async function ensureGroup(): Promise<void> {
    try {
      await guard(redis.xgroup('CREATE', channel, group, '0', 'MKSTREAM'));
      log.info({ group }, 'created consumer group');
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith('BUSYGROUP'))) throw err;
    }
    groupReady = true;
  }

  type ReadReply = Array<[Buffer, RawEntry[]]> | null;

  async function readGroup(id: string, block: boolean): Promise<RawEntry[]> {
    const args: Array<string | number> = ['GROUP', group, consumer, 'COUNT', batchSize];
    if (block) args.push('BLOCK', blockMs);
    args.push('STREAMS', channel, id);
    const reply = (await guard(redis.callBuffer('XREADGROUP', ...args))) as ReadReply;
    return reply?.[0]?.[1] ?? [];
  }

  async function autoclaim(): Promise<RawEntry[]> {
    const reply = (await guard(
      redis.callBuffer(
        'XAUTOCLAIM',
        channel,
        group,
        consumer,
        options.claimIdleMs,
        claimCursor,
        'COUNT',
        batchSize,
      ),
    )) as [Buffer, RawEntry[], Buffer[]?];
    claimCursor = reply[0].toString();
    if (claimCursor === '0-0') nextClaimAt = Date.now() + claimEveryMs;
    const entries = reply[1].filter((e) => e[1] !== null);
    if (entries.length > 0)
      log.info({ count: entries.length }, 'claimed entries left pending by another consumer');
    return entries;
  }

  function park(id: string, size: number, reason: string): void {
    if (parked.size > 10_000) parked.clear();
    parked.add(id);
    count('too_large');
    log.error(
      { entryId: id, size, limit: options.maxBodyBytes },
      `broker entry ${reason}: left pending, not recorded`,
    );
  }

  /** Appends every entry, then acknowledges those appended; throws if any append failed. */
  async function handle(entries: RawEntry[]): Promise<void> {
    const ack: string[] = [];
    const work: Array<Promise<unknown>> = [];
    const now = clock.now();
    for (const entry of entries) {
      const id = idOf(entry);
      const fields = entry[1];
      if (fields === null) {
        ack.push(id); // trimmed or deleted from the stream: nothing left to record
        continue;
      }
      if (parked.has(id)) continue;
      const delivery = toBrokerDelivery(channel, id, fields, now);
      const size = delivery.payload.byteLength;
      if (size > options.maxBodyBytes) {
        park(id, size, 'larger than HOOKLINE_MAX_BODY_BYTES');
        continue;
      }
      // Issued together so that the store groups them into one commit.
      work.push(
        recorder.record(delivery).then(
          () => {
            ack.push(id);
            count('accepted');
          },
          (err: unknown) => {
            // Refused for good (the store's own size limit): retrying cannot help.
            if (err instanceof HooklineError && err.code === 'payload_too_large')
              park(id, size, 'refused as too large');
            else {
              count('failed'); // left pending: read again and retried
              throw err;
            }
          },
        ),
      );
    }
    const results = await guard(Promise.allSettled(work));
    if (ack.length > 0) await guard(redis.xack(channel, group, ...ack));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }

  async function step(): Promise<void> {
    enabled = await options.isEnabled();
    if (!enabled) {
      await sleep(disabledPollMs);
      return;
    }
    if (!groupReady) await ensureGroup();
    let entries: RawEntry[];
    if (pendingCursor !== null) {
      const cursor = pendingCursor;
      entries = await readGroup(cursor, false);
      const last = entries.at(-1);
      pendingCursor = last ? idOf(last) : null;
    } else if (Date.now() >= nextClaimAt) {
      entries = await autoclaim();
    } else {
      entries = await readGroup('>', true);
    }
    if (entries.length === 0) return;
    if (!(await options.isEnabled())) {
      // Disabled while we were blocked: leave these in our pending list for when it is enabled again.
      enabled = false;
      pendingCursor = '0';
      return;
    }
    handling = true;
    try {
      await handle(entries);
    } finally {
      handling = false;
    }
  }

  const loop = (async () => {
    let failures = 0;
    while (!stopped) {
      try {
        await step();
        failures = 0;
        loopError = false;
      } catch (err) {
        if (stopped) break;
        if (err instanceof Error && err.message.startsWith('NOGROUP')) groupReady = false;
        // Whatever happened, the entries in hand are in our pending list: walk it again.
        pendingCursor = '0';
        loopError = isRedisError(err);
        if (failures === 0 || failures % 20 === 0)
          log.warn({ err, failures }, 'broker consumer step failed; retrying');
        await sleep(backoffMs(failures++));
      }
    }
  })();

  return {
    channel,
    state: () => {
      if (!enabled) return 'disabled';
      if (redis.status !== 'ready' || loopError) return 'error';
      return 'ok';
    },
    stop: async () => {
      if (stopped) return loop;
      stopped = true;
      wake?.();
      const cut = () => abort(new Error('broker consumer stopped'));
      // A batch in hand gets a bounded time to be appended and acknowledged; anything else
      // (a blocked read, a command waiting for Redis) is cut at once. What was read and not
      // acknowledged stays pending and comes back through a claim, stored once.
      if (!handling) cut();
      const timer = setTimeout(cut, STOP_GRACE_MS);
      await loop;
      clearTimeout(timer);
      redis.disconnect();
    },
  };
}
