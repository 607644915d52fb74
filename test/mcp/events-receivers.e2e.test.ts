import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operator } from '../http/api/client.ts';
import { postForm } from '../http/ui/support.ts';
import { dropStreams, testRedis, waitFor } from '../ingest/broker/support.ts';
import { REDIS_URL, redisAvailable, redisPrefix } from '../support/services.ts';
import { type Agent, connectAgent, settled, startServer, type TestServer } from './support.ts';

const hasRedis = await redisAvailable();

type Summary = { id: number; provider: string; event_type: string | null; trust_mode: string };
type Page = { events: Summary[]; next_cursor: string | null };
type Detail = Summary & { payload: string; encoding: string; external_id: string | null };
type Vended = { slug: string; token: string; mcp_url: string; webhook: { ingest_url: string } };

/**
 * The scope of list_events and get_event (spec 1.1, 2.2): every endpoint reads the instance
 * receivers' deliveries, a generic provider's and a broker channel's as much as a signed one's
 * (test/mcp/events.e2e.test.ts); another endpoint's webhook deliveries stay not_found. Senders
 * as people run them: a generic provider made and enabled through its form and posted to with its
 * token, and an entry added to the Redis stream the broker adapter reads.
 */
describe.runIf(hasRedis)('every endpoint reads the generic and broker deliveries over MCP', () => {
  const channel = `${redisPrefix('hookline-broker')}mcp-events`;
  let server: TestServer;
  let redis: Redis;
  const agents = {} as Record<'a' | 'a2' | 'b', Agent>;
  const ids = {} as Record<'generic' | 'broker' | 'aWebhook' | 'a2Webhook' | 'bWebhook', number>;
  const genericBody = JSON.stringify({ build: 1234, status: 'green' });
  const brokerBody = JSON.stringify({ order: 42, state: 'paid' });

  const deliver = async (url: string, body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    const text = await res.text();
    expect(res.status, text).toBe(202);
    return (JSON.parse(text) as { id: number }).id;
  };

  beforeAll(async () => {
    redis = testRedis(REDIS_URL);
    server = await startServer({
      env: {
        HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1',
        HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User',
        HOOKLINE_BROKER_URL: REDIS_URL,
        HOOKLINE_BROKER_CHANNELS: channel,
      },
    });
    const alice = await operator(server.url, 'alice');
    const bob = await operator(server.url, 'bob');
    const vend = async (who: typeof alice, name: string) => {
      const res = await who.call<Vended>('POST', '/endpoints', { name });
      expect(res.status, res.text).toBe(201);
      return res.body;
    };
    const a = await vend(alice, 'Receivers A');
    const a2 = await vend(alice, 'Receivers A2');
    const b = await vend(bob, 'Receivers B');

    // A generic provider, as the Providers screen makes it: created, enabled, then posted to.
    const json = { accept: 'application/json' };
    const created = await postForm(server.url, '/providers', { name: 'builds', trust_mode: 'token' }, json);
    expect(created.status).toBe(201);
    const { token } = (await created.json()) as { token: string };
    const enabled = await postForm(
      server.url,
      '/providers/generic%3Abuilds/enabled',
      { enabled: 'true' },
      json,
    );
    expect(enabled.status).toBe(200);
    ids.generic = await deliver(`${server.url}/webhooks/generic/builds`, genericBody, {
      authorization: `Bearer ${token}`,
      'x-hookline-event': 'build.finished',
      'x-hookline-delivery': 'build-1234',
    });

    // A broker delivery: an entry on the channel's stream, read by the broker adapter.
    await redis.xadd(
      channel,
      '*',
      'payload',
      brokerBody,
      'event_type',
      'order.paid',
      'delivery_id',
      'order-42',
    );

    ids.aWebhook = await deliver(a.webhook.ingest_url, '{"n":1}');
    ids.a2Webhook = await deliver(a2.webhook.ingest_url, '{"n":2}');
    ids.bWebhook = await deliver(b.webhook.ingest_url, '{"n":3}');

    agents.a = await connectAgent({ url: a.mcp_url, token: a.token });
    agents.a2 = await connectAgent({ url: a2.mcp_url, token: a2.token });
    agents.b = await connectAgent({ url: b.mcp_url, token: b.token });
    ids.broker = await waitFor('the broker delivery over MCP', async () => {
      const page = await agents.a.ok<Page>('list_events', { provider: `broker:${channel}` });
      return page.events[0]?.id;
    });
    await settled(server);
  });
  afterAll(async () => {
    for (const agent of Object.values(agents)) await agent.close();
    await server?.close();
    if (redis) {
      await dropStreams(redis, [channel]);
      redis.disconnect();
    }
  });

  const all = async (agent: Agent, args: Record<string, unknown> = {}): Promise<Summary[]> => {
    const out: Summary[] = [];
    let cursor: string | null = null;
    do {
      const page: Page = await agent.ok<Page>('list_events', { ...args, ...(cursor ? { cursor } : {}) });
      out.push(...page.events);
      cursor = page.next_cursor;
    } while (cursor);
    return out;
  };

  it.each([
    ['A', 'a', 'aWebhook', ['a2Webhook', 'bWebhook']],
    ['A2 (same operator)', 'a2', 'a2Webhook', ['aWebhook', 'bWebhook']],
    ['B (another operator)', 'b', 'bWebhook', ['aWebhook', 'a2Webhook']],
  ] as const)(
    'endpoint %s lists and reads both; another endpoint’s webhook delivery is not_found',
    async (_, who, own, foreign) => {
      const agent = agents[who];
      const seen = (await all(agent, { limit: 200 })).map((e) => e.id);
      for (const id of [ids.generic, ids.broker, ids[own]]) expect(seen).toContain(id);
      for (const other of foreign) expect(seen).not.toContain(ids[other]);

      expect((await all(agent, { provider: 'generic:builds' })).map((e) => e.id)).toEqual([ids.generic]);
      expect((await all(agent, { provider: `broker:${channel}` })).map((e) => e.id)).toEqual([ids.broker]);

      const generic = (await agent.ok<{ event: Detail }>('get_event', { event_id: ids.generic })).event;
      expect(generic).toMatchObject({
        id: ids.generic,
        provider: 'generic:builds',
        event_type: 'build.finished',
        trust_mode: 'token',
        external_id: 'build-1234',
        payload: genericBody,
        encoding: 'utf-8',
      });
      const broker = (await agent.ok<{ event: Detail }>('get_event', { event_id: ids.broker })).event;
      expect(broker).toMatchObject({
        id: ids.broker,
        provider: `broker:${channel}`,
        event_type: 'order.paid',
        trust_mode: 'queue',
        external_id: 'order-42',
        payload: brokerBody,
        encoding: 'utf-8',
      });

      for (const other of foreign) {
        expect(await agent.refused('get_event', { event_id: ids[other] }), other).toBe('not_found');
      }
    },
  );
});
