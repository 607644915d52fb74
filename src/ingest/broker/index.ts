import os from 'node:os';
import type { ComponentState } from '../../health-registry.ts';
import type { Logger } from '../../logger.ts';
import { createProviderDirectory, type ProviderDirectory } from '../../providers/directory.ts';
import type { Runtime } from '../../runtime.ts';
import type { DeliveryRecorder } from '../recorder.ts';
import { backoffMs, type ChannelConsumer, startChannelConsumer } from './consumer.ts';
import { brokerProviderName } from './message.ts';

export { type BrokerDelivery, brokerProviderName } from './message.ts';

/** Every hookline instance joins this group on every channel, so instances share the work. */
export const BROKER_GROUP = 'hookline';

/**
 * The consumer name within the group: stable for the life of the process, unique across
 * processes and hosts. A restarted process is a new consumer; what the old one left pending is
 * claimed after the idle time.
 */
export const brokerConsumerName = (): string => `${os.hostname()}-${process.pid}`;

export interface BrokerConsumers {
  state(): ComponentState;
  stop(): Promise<void>;
}

/** The health of all channels together: any error wins, then all-disabled, else ok. */
export function combineStates(states: readonly ComponentState[]): ComponentState {
  if (states.includes('error')) return 'error';
  if (states.length > 0 && states.every((s) => s === 'disabled')) return 'disabled';
  return 'ok';
}

export interface BrokerOptions {
  /** The providers module's directory, shared with the HTTP routes; one of our own otherwise. */
  readonly providers?: ProviderDirectory;
  readonly blockMs?: number;
  readonly batchSize?: number;
}

/**
 * Whether `broker:<channel>` is enabled, from the provider's own stream through the directory's
 * short cache (a disable by an operator is seen within its TTL). When the state cannot be read,
 * the last known answer stands: appends would fail too, and the consumer backs off on those.
 */
function enabledCheck(providers: ProviderDirectory, name: string, logger: Logger): () => Promise<boolean> {
  let last = true;
  let warnedAt = 0;
  return async () => {
    try {
      last = (await providers.lookup(name))?.enabled ?? false;
    } catch (err) {
      if (Date.now() - warnedAt > 30_000) {
        warnedAt = Date.now();
        logger.warn({ err, provider: name }, 'provider state unavailable; keeping the last known');
      }
    }
    return last;
  };
}

/**
 * Starts one consumer per channel of `config.broker.channels` when `HOOKLINE_BROKER_URL` is set,
 * registers `broker` with the health registry and stops with the runtime. Without a broker URL
 * (or without channels) it starts nothing and `/healthz` says `broker: "disabled"`.
 */
export async function startBrokerConsumers(
  runtime: Runtime,
  recorder: Pick<DeliveryRecorder, 'record'>,
  overrides: BrokerOptions = {},
): Promise<BrokerConsumers | undefined> {
  const { config, logger, clock, store } = runtime;
  const { url, claimIdleMs } = config.broker;
  const channels = [...new Set(config.broker.channels)]; // a channel named twice is consumed once
  if (!url || channels.length === 0) {
    // Spec 2.7: `disabled` is the broker's state when none is configured; status stays ok.
    runtime.health.register('broker', () => 'disabled');
    return undefined;
  }
  // ioredis is loaded only when a broker is configured (about 20 MB otherwise not held).
  const { Redis } = await import('ioredis');
  const consumerName = brokerConsumerName();
  const providers = overrides.providers ?? createProviderDirectory({ store, config, clock });
  const consumers: ChannelConsumer[] = channels.map((channel) => {
    const redis = new Redis(url, {
      protocol: 2, // RESP2 reply shapes: XREADGROUP and XAUTOCLAIM arrays as documented by Redis
      connectionName: `hookline:${consumerName}:${channel}`,
      // Commands wait through an outage instead of failing after 20 retries; the loop resumes.
      maxRetriesPerRequest: null,
      retryStrategy: (times) => backoffMs(times),
      // A silent, half-open connection must not block the consumer forever.
      blockingTimeout: 30_000,
    });
    let lastErrorLog = 0;
    redis.on('error', (err) => {
      if (Date.now() - lastErrorLog > 10_000) {
        lastErrorLog = Date.now();
        logger.warn({ err, channel, component: 'broker' }, 'broker connection error; reconnecting');
      }
    });
    const isEnabled = enabledCheck(providers, brokerProviderName(channel), logger);
    return startChannelConsumer({
      redis,
      channel,
      group: BROKER_GROUP,
      consumer: consumerName,
      recorder,
      isEnabled,
      clock,
      logger,
      claimIdleMs,
      maxBodyBytes: config.maxBodyBytes,
      ...(overrides.blockMs === undefined ? {} : { blockMs: overrides.blockMs }),
      ...(overrides.batchSize === undefined ? {} : { batchSize: overrides.batchSize }),
    });
  });
  logger.info({ channels, group: BROKER_GROUP, consumer: consumerName }, 'broker consumers started');
  const handle: BrokerConsumers = {
    state: () => combineStates(consumers.map((c) => c.state())),
    stop: async () => {
      await Promise.all(consumers.map((c) => c.stop()));
    },
  };
  runtime.health.register('broker', handle.state);
  runtime.onClose(handle.stop);
  return handle;
}
