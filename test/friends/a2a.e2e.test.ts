import { randomBytes, randomUUID } from 'node:crypto';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approveFriend, declineFriend, setFriendRequests } from '../../src/friends/edges.ts';
import { createSecretBox } from '../../src/webhooks/secret-box.ts';
import { readStream } from '../http/api/client.ts';
import { type Agent, connectAgent, settled, startServer, type TestServer, vend } from '../mcp/support.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

const request = (data: Record<string, unknown>) => ({
  message: {
    kind: 'message' as const,
    role: 'user' as const,
    messageId: randomUUID(),
    parts: [{ kind: 'data' as const, data }],
  },
});

/** The A2A surface with @a2a-js/sdk's client: the refusals, withdrawal, decline, and the limit per address. */
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

  it('the owner declining the request gives the task `rejected`, without an artifact', async () => {
    const client = await new ClientFactory().createFromUrl(cardUrl, '');
    const sent = await client.sendMessage(
      request({ name: 'Hopeful Bot', verbs: ['create_for', 'claim_next'], queue: 'inbox' }),
    );
    if (sent.kind !== 'task') throw new Error('expected a task');
    expect(sent.status.state).toBe('input-required');
    const { store, clock } = server.runtime;
    await declineFriend({ store, clock }, { operator: 'alice', human: 'alice', friendRef: sent.id });
    const task = await client.getTask({ id: sent.id });
    expect(task.status.state).toBe('rejected');
    expect(task.metadata).toMatchObject({ friend_state: 'declined' });
    expect(task.artifacts).toBeUndefined();
    await expect(client.cancelTask({ id: sent.id })).rejects.toThrow(/cannot be canceled/i);
  });

  // Last: it uses up this address's allowance.
  it('limits message/send per source address: 429 with Retry-After, and the refused request is not stored', async () => {
    const requests = async () => {
      // $all shows a commit once every older writer has finished: wait until it shows them all.
      await settled(server);
      let n = 0;
      for await (const e of server.runtime.store.readAll()) if (e.type === 'FriendRequested') n++;
      return n;
    };
    const before = await requests();
    // The SDK's own JSON-RPC transport, over a fetch that keeps the last answer's headers.
    let last: Response | undefined;
    const recording: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      last = res.clone();
      return res;
    };
    const client = await new ClientFactory({
      transports: [new JsonRpcTransportFactory({ fetchImpl: recording })],
    }).createFromUrl(cardUrl, '');
    let sent = 0;
    let refused: unknown;
    for (let i = 0; i < 80 && refused === undefined; i++) {
      try {
        await client.sendMessage(request({ name: `Eager Bot ${i}`, verbs: ['create_for'], queue: 'inbox' }));
        sent++;
      } catch (err) {
        refused = err;
      }
    }
    expect(String(refused)).toMatch(/message\/send.*Status: 429/);
    expect(sent).toBeGreaterThan(0);
    expect(last?.status).toBe(429);
    expect(Number(last?.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(last?.headers.get('content-type')).toMatch(/problem\+json/);
    expect(await requests()).toBe(before + sent);
    // The allowance is the address's, whatever it asks: the Agent Card too.
    const card = await fetch(cardUrl);
    expect(card.status).toBe(429);
    expect(Number(card.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

/**
 * Tasks live in the event log: a request sent before a restart is followed, approved and its
 * credential collected after it, on the same database (and the same secret key, which sealed it).
 */
describe.runIf(await postgresAvailable())('friend request tasks survive a restart', () => {
  let database: TestDatabase;
  const env = { HOOKLINE_SECRET_KEY: randomBytes(32).toString('base64url') };
  beforeAll(async () => {
    database = await createTestDatabase('hookline_a2a_restart');
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('tasks/get finds the request after a restart, and the approval then hands over its credential', async () => {
    let server = await startServer({ databaseUrl: database.url, env });
    let taskId: string;
    let slug: string;
    try {
      const ep = await vend(server);
      slug = ep.slug;
      const { store, clock } = server.runtime;
      await setFriendRequests(
        { store, clock },
        { operator: 'alice', human: 'alice', ref: slug, accept: true },
      );
      const client = await new ClientFactory().createFromUrl(
        `${server.url}/a2a/${slug}/.well-known/agent-card.json`,
        '',
      );
      const sent = await client.sendMessage(
        request({ name: 'Durable Bot', verbs: ['create_for', 'list_todos'], queue: 'handback' }),
      );
      if (sent.kind !== 'task') throw new Error('expected a task');
      taskId = sent.id;
    } finally {
      await server.close();
    }

    server = await startServer({ databaseUrl: database.url, env });
    let friend: Agent | undefined;
    try {
      const client = await new ClientFactory().createFromUrl(
        `${server.url}/a2a/${slug}/.well-known/agent-card.json`,
        '',
      );
      const waiting = await client.getTask({ id: taskId });
      expect(waiting.status.state).toBe('input-required');

      const { store, clock } = server.runtime;
      await approveFriend(
        {
          store,
          clock,
          secretBox: createSecretBox({ secretKey: env.HOOKLINE_SECRET_KEY, dataDir: '/nonexistent' }),
        },
        { operator: 'alice', human: 'alice', friendRef: taskId, verbs: undefined },
      );
      const done = await client.getTask({ id: taskId });
      expect(done.status.state).toBe('completed');
      const part = done.artifacts?.[0]?.parts[0];
      if (part?.kind !== 'data') throw new Error('no credential artifact');
      const cred = part.data as { mcp_url: string; bearer: string; granted_verbs: string[] };
      expect(cred.bearer).toMatch(/^hlk_/);
      expect(cred.mcp_url.startsWith(`${server.url}/mcp/`)).toBe(true);
      expect(cred.granted_verbs).toEqual(['create_for', 'list_todos']);
      friend = await connectAgent({ url: cred.mcp_url, token: cred.bearer });
      expect((await friend.client.listTools()).tools.map((t) => t.name).sort()).toEqual([
        'create_for',
        'list_todos',
      ]);
      // Collected once: the next read shows it redacted.
      const again = (await client.getTask({ id: taskId })).artifacts?.[0]?.parts[0];
      expect(again?.kind === 'data' ? again.data : undefined).toMatchObject({ bearer: null, redacted: true });
    } finally {
      await friend?.close().catch(() => {});
      await server.close();
    }
  });
});
