import { EventSource } from 'eventsource';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.ts';
import { type RunningServer, startServer } from '../../../src/server.ts';
import { freshDataDir, removeDataDir } from '../../support/embedded.ts';
import { REDIS_URL, redisAvailable, redisPrefix } from '../../support/services.ts';
import { dropStreams, testRedis, waitFor } from './support.ts';

const hasRedis = await redisAvailable();

interface Summary {
  id: number;
  provider: string;
  event_type: string | null;
  trust_mode: string;
  verified: boolean;
  payload_size: number;
  received_at: string;
}

/** Issue 8 point 3: a broker delivery shows everywhere an HTTP one does. */
describe.runIf(hasRedis)('a broker delivery on every surface', () => {
  const channel = `${redisPrefix('hookline-broker')}surfaces`;
  const provider = `broker:${channel}`;
  let dataDir = '';
  let server: RunningServer;
  let redis: Redis;
  let events: EventSource;
  const received: Summary[] = [];

  beforeAll(async () => {
    dataDir = await freshDataDir();
    redis = testRedis(REDIS_URL);
    server = await startServer(
      loadConfig({
        HOOKLINE_PORT: '0',
        HOOKLINE_DATA_DIR: dataDir,
        HOOKLINE_BROKER_URL: REDIS_URL,
        HOOKLINE_BROKER_CHANNELS: channel,
        HOOKLINE_LOG_LEVEL: 'silent',
      }),
    );
    events = new EventSource(`${server.url}/events`);
    events.addEventListener('event-received', (e) => {
      received.push(JSON.parse(e.data) as Summary);
    });
    await new Promise<void>((resolve, reject) => {
      events.onopen = () => resolve();
      events.onerror = () => reject(new Error('SSE connection failed'));
    });
  });

  afterAll(async () => {
    events?.close();
    await server?.stop();
    await dropStreams(redis, [channel]);
    redis?.disconnect();
    if (dataDir) await removeDataDir(dataDir);
  });

  it('emits event-received, lists it in the log with its detail, and shows the channel on /providers', async () => {
    await redis.xadd(channel, '*', 'payload', '{"surface":"ok"}', 'event_type', 'surface.test');
    const summary = await waitFor('event-received', () => received.find((s) => s.provider === provider));
    expect(summary).toMatchObject({
      provider,
      event_type: 'surface.test',
      trust_mode: 'queue',
      verified: false,
      payload_size: 16,
    });

    const log = await waitFor('the log row', async () => {
      const html = await (await fetch(`${server.url}/log?provider=${encodeURIComponent(provider)}`)).text();
      return html.includes('surface.test') && html;
    });
    expect(log).toContain(provider);

    const detail = await fetch(`${server.url}/log/${summary.id}`);
    expect(detail.status).toBe(200);
    const body = await detail.text();
    expect(body).toContain('surface');
    expect(body).toContain(channel);

    const providers = await (await fetch(`${server.url}/providers`)).text();
    expect(providers).toContain(provider);
    expect(providers).toContain(channel);

    const health = (await (await fetch(`${server.url}/healthz`)).json()) as Record<string, unknown>;
    expect(health.broker).toBe('ok');
  });
});
