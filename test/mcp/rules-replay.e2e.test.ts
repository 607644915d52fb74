import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonEvent } from '../../src/eventstore/codec.ts';
import { type ClassifyAddress, classifyAddress } from '../../src/replay/ssrf.ts';
import { type TestServer as HttpsServer, makeCert, startServer as startHttps } from '../replay/servers.ts';
import { post, startRulesServer, vendWithTargets } from './rules-support.ts';
import { connectAgent, settled, type TestServer, vend } from './support.ts';

// The test's own HTTPS server listens on 127.0.0.2; only this test's runtime counts that address as
// public (the classification is injected here, never in the shipped configuration).
const classify: ClassifyAddress = (ip) => (ip === '127.0.0.2' ? { public: true } : classifyAddress(ip));

describe('replay_webhook_event over MCP', () => {
  let server: TestServer;
  let target: HttpsServer;

  beforeAll(async () => {
    const cert = makeCert();
    target = await startHttps('127.0.0.2', cert, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('thanks');
    });
    server = await startRulesServer({ replay: { classify, ca: cert.cert } });
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await target?.close();
  });

  it("replays the stored bytes and content type to the endpoint's first replay target", async () => {
    const ep = await vendWithTargets(server, [`${target.origin()}/hooks/in`]);
    const agent = await connectAgent(ep);
    try {
      const body = '{"b":  "spacing kept",\n "é": 1}';
      const res = await fetch(ep.ingestUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=utf-8' },
        body,
      });
      expect(res.status).toBe(202);
      const { id } = (await res.json()) as { id: number };
      await settled(server);

      const replayed = await agent.ok<{ status: number; target: string }>('replay_webhook_event', {
        event_id: id,
      });
      expect(replayed.status).toBe(200);
      const seen = target.seen.at(-1)!;
      expect(seen.url).toBe('/hooks/in');
      expect(seen.body.equals(Buffer.from(body))).toBe(true);
      expect(seen.headers['content-type']).toBe('application/json; charset=utf-8');

      // A refused target: loopback, through the same guard.
      const before = target.seen.length;
      expect(
        await agent.refused('replay_webhook_event', {
          event_id: id,
          target_url: `https://127.0.0.1:${target.port}/`,
        }),
      ).toBe('replay_refused');
      expect(target.seen.length).toBe(before);
    } finally {
      await agent.close();
    }
  }, 120_000);

  it('with no target_url and no replay target: replay_target_required; another endpoint: not_found', async () => {
    const ep = await vend(server);
    const agent = await connectAgent(ep);
    const sibling = await vendWithTargets(server, [`${target.origin()}/x`]);
    const other = await connectAgent(sibling);
    try {
      const res = await post(ep.ingestUrl, { a: 1 });
      const { id } = (await res.json()) as { id: number };
      await settled(server);
      expect(await agent.refused('replay_webhook_event', { event_id: id })).toBe('replay_target_required');
      expect(await other.refused('replay_webhook_event', { event_id: id })).toBe('not_found');
    } finally {
      await agent.close();
      await other.close();
    }
  }, 120_000);
});

describe('a webhook with rules when the sandbox cannot run', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startRulesServer({
      ruleEngine: {
        childModule: new URL('../rules-sandbox/fixtures/no-sandbox.ts', import.meta.url),
        startTimeoutMs: 2_000,
      },
    });
  }, 120_000);
  afterAll(async () => {
    await server?.close();
  });

  it('answers 503 and records nothing; a webhook without rules still answers 202', async () => {
    const withRules = await vend(server);
    const without = await vend(server);
    await server.runtime.store.append(`webhook-${withRules.webhookId}`, [
      jsonEvent('WebhookRulesSet', {
        webhook_id: withRules.webhookId,
        by: 'test',
        at: new Date().toISOString(),
        version: 1,
        rules: [{ id: 'all', source: "() => ({ route: 'inbox' })" }],
      }),
    ]);
    const head = await server.runtime.store.committedPosition();
    for (let i = 0; i < 2; i++) {
      const res = await post(withRules.ingestUrl, { n: i });
      expect(res.status).toBe(503);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(((await res.json()) as { code: string }).code).toBe('sandbox_unavailable');
    }
    expect(await server.runtime.store.committedPosition()).toBe(head);
    expect((await post(without.ingestUrl, { n: 1 })).status).toBe(202);
  }, 120_000);
});
