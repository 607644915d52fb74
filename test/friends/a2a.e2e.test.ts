import { randomUUID } from 'node:crypto';
import { ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setFriendRequests } from '../../src/friends/edges.ts';
import { readStream } from '../http/api/client.ts';
import { startServer, type TestServer, vend } from '../mcp/support.ts';

const request = (data: Record<string, unknown>) => ({
  message: {
    kind: 'message' as const,
    role: 'user' as const,
    messageId: randomUUID(),
    parts: [{ kind: 'data' as const, data }],
  },
});

/** The A2A surface with @a2a-js/sdk's client: the refusals, withdrawal, and the limit per address. */
describe('friend requests over A2A', () => {
  let server: TestServer;
  let slug: string;
  let cardUrl: string;
  beforeAll(async () => {
    server = await startServer({ env: { HOOKLINE_A2A_RATE_LIMIT: '60' } });
    const ep = await vend(server);
    slug = ep.slug;
    cardUrl = `${server.url}/a2a/${slug}/.well-known/agent-card.json`;
    const { store, clock } = server.runtime;
    await setFriendRequests({ store, clock }, { operator: 'alice', human: 'alice', ref: slug, accept: true });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('refuses a request naming only ungrantable verbs with 400 and stores nothing; refuses quarantine', async () => {
    const raw = await fetch(`${server.url}/a2a/${slug}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'message/send',
        params: request({ name: 'Greedy', verbs: ['create_webhook', 'set_webhook_rules'], queue: 'inbox' }),
      }),
    });
    expect(raw.status).toBe(400);
    const body = (await raw.json()) as { error: { code: number; message: string } };
    expect(body.error.code).toBe(-32602);
    expect(body.error.message).toMatch(/never be granted/);

    const client = await new ClientFactory().createFromUrl(cardUrl, '');
    await expect(
      client.sendMessage(request({ name: 'Sneaky', verbs: ['create_for'], queue: 'quarantine' })),
    ).rejects.toThrow(/quarantine/);
    const all = [];
    for await (const e of server.runtime.store.readAll()) if (e.streamId.startsWith('friend-')) all.push(e);
    expect(all).toEqual([]);
  });

  it('tasks/cancel withdraws a pending request; an unknown task is not found', async () => {
    const client = await new ClientFactory().createFromUrl(cardUrl, '');
    const sent = await client.sendMessage(
      request({ name: 'Shy Bot', verbs: ['create_for'], queue: 'inbox' }),
    );
    if (sent.kind !== 'task') throw new Error('expected a task');
    const canceled = await client.cancelTask({ id: sent.id });
    expect(canceled.status.state).toBe('canceled');
    expect((await client.getTask({ id: sent.id })).status.state).toBe('canceled');
    await expect(client.cancelTask({ id: sent.id })).rejects.toThrow();
    expect((await readStream(server.runtime.store, `friend-${sent.id}`)).map((e) => e.type)).toEqual([
      'FriendRequested',
      'FriendWithdrawn',
    ]);
    await expect(client.getTask({ id: 'fr_aaaaaaaaaaaaaaaaaaaa' })).rejects.toThrow(/not found/i);
  });

  it('an endpoint that does not take friend requests, or no endpoint, answers 404', async () => {
    const other = await vend(server);
    expect((await fetch(`${server.url}/a2a/${other.slug}/.well-known/agent-card.json`)).status).toBe(404);
    expect((await fetch(`${server.url}/a2a/no-such-endpoint/.well-known/agent-card.json`)).status).toBe(404);
  });

  // Last: it uses up this address's allowance.
  it('limits requests per source address: 429 with Retry-After', async () => {
    let limited: Response | undefined;
    for (let i = 0; i < 80 && !limited; i++) {
      const res = await fetch(cardUrl);
      if (res.status === 429) limited = res;
      else expect(res.status).toBe(200);
    }
    expect(limited?.status).toBe(429);
    expect(Number(limited?.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited?.headers.get('content-type')).toMatch(/problem\+json/);
  });
});
