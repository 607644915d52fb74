import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operator, readStream, settled } from '../http/api/client.ts';
import { connectAgent, startServer, type TestServer } from '../mcp/support.ts';

const PROXY_ENV = {
  HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1',
  HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User',
};

type Edge = {
  id: string;
  state: string;
  direction: string;
  requested_verbs: string[];
  grantable_verbs: string[];
  granted_verbs: string[] | null;
  friend_endpoint: { id: string; slug: string; mcp_url: string } | null;
  credential: string | null;
  message: string | null;
};
type Credential = {
  slug: string;
  mcp_url: string;
  token: string;
  mcp_json: { mcpServers: Record<string, unknown> };
};

/**
 * The operator API of friends over real HTTP, with operators signed in through the real OAuth
 * flow, and the friend endpoint driven by the MCP SDK's client: the misuse cases of the issue.
 */
describe('friends over the operator API', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: PROXY_ENV });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('requests, refuses what must be refused, approves narrowed, hands the credential over once', async () => {
    const alice = await operator(server.url, 'alice');
    const bob = await operator(server.url, 'bob');
    const carol = await operator(server.url, 'carol');
    const a = (await alice.call<{ slug: string; id: string }>('POST', '/endpoints', { name: 'Approver' }))
      .body;
    const b = (
      await bob.call<{ slug: string; id: string }>('POST', '/endpoints', { name: 'Requester', queue: 'work' })
    ).body;

    // Off by default: an endpoint that does not take friend requests is not found.
    const off = await bob.call('POST', '/friends', { from: b.slug, to: a.slug, verbs: ['create_for'] });
    expect(off.status, off.text).toBe(404);
    expect((await carol.call('POST', `/endpoints/${a.slug}/friend-requests`, { accept: true })).status).toBe(
      404,
    );
    const on = await alice.call<{ accept_friend_requests: boolean; agent_card_url: string }>(
      'POST',
      `/endpoints/${a.slug}/friend-requests`,
      { accept: true },
    );
    expect(on.status, on.text).toBe(200);
    expect(on.body.agent_card_url).toBe(`${server.url}/a2a/${a.slug}/.well-known/agent-card.json`);

    // Only verbs a friend can never hold: 400, and nothing stored.
    const bad = await bob.call<{ code: string; detail: string }>('POST', '/friends', {
      from: b.slug,
      to: a.slug,
      verbs: ['create_webhook', 'set_webhook_rules'],
    });
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.detail).toMatch(/never be granted/);
    // quarantine as the friend queue: 400.
    const held = await bob.call('POST', '/friends', {
      from: b.slug,
      to: a.slug,
      verbs: ['create_for'],
      queue: 'quarantine',
    });
    expect(held.status, held.text).toBe(400);
    await settled(server);
    expect((await bob.call<Edge[]>('GET', '/friends')).body).toEqual([]);
    expect((await alice.call<Edge[]>('GET', '/friends')).body).toEqual([]);

    const asked = await bob.call<Edge>('POST', '/friends', {
      from: b.slug,
      to: a.slug,
      verbs: ['create_for', 'claim_next', 'complete', 'list_todos', 'create_webhook'],
      message: '<script>alert(1)</script>',
    });
    expect(asked.status, asked.text).toBe(201);
    expect(asked.body).toMatchObject({ state: 'pending', direction: 'outgoing', granted_verbs: null });
    expect(asked.body.grantable_verbs).toEqual(['create_for', 'list_todos', 'claim_next', 'complete']);
    const id = asked.body.id;

    // Another operator's edges are invisible: not listed, and 404 on every move.
    expect((await carol.call<Edge[]>('GET', '/friends')).body).toEqual([]);
    for (const move of ['approve', 'decline', 'revoke']) {
      expect((await carol.call('POST', `/friends/${id}/${move}`, {})).status).toBe(404);
    }
    expect((await carol.call('POST', `/friends/${id}/narrow`, { verbs: ['create_for'] })).status).toBe(404);
    expect((await carol.call('POST', `/friends/${id}/credential`)).status).toBe(404);
    expect((await bob.call('POST', `/friends/${id}/approve`, {})).status).toBe(404);

    const incoming = (await alice.call<Edge[]>('GET', '/friends')).body;
    expect(incoming).toHaveLength(1);
    expect(incoming[0]).toMatchObject({ id, direction: 'incoming', message: '<script>alert(1)</script>' });

    // A grant outside the request is refused; a narrower one is recorded.
    expect((await alice.call('POST', `/friends/${id}/approve`, { verbs: ['heartbeat'] })).status).toBe(400);
    const approved = await alice.call<Edge>('POST', `/friends/${id}/approve`, {
      verbs: ['create_for', 'claim_next', 'list_todos'],
    });
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body).toMatchObject({
      state: 'approved',
      granted_verbs: ['create_for', 'list_todos', 'claim_next'],
    });
    expect((await alice.call('POST', `/friends/${id}/approve`, {})).status).toBe(409);

    // The credential: to the requester, once.
    expect((await alice.call('POST', `/friends/${id}/credential`)).status).toBe(404);
    const cred = await bob.call<Credential>('POST', `/friends/${id}/credential`);
    expect(cred.status, cred.text).toBe(200);
    expect(cred.body.token).toMatch(/^hlk_/);
    expect(cred.body.mcp_url).toBe(`${server.url}/mcp/${cred.body.slug}`);
    expect((await bob.call('POST', `/friends/${id}/credential`)).status).toBe(409);
    await settled(server);
    expect((await bob.call<Edge[]>('GET', '/friends')).body[0]?.credential).toBe('collected');
    // The bearer entered the log only sealed.
    const raw = JSON.stringify((await readStream(server.runtime.store, `friend-${id}`)).map((e) => e.data));
    expect(raw).not.toContain(cred.body.token);

    // The friend endpoint holds exactly the grant; narrowing drops a verb (forbidden), revoking ends it (401).
    const agent = await connectAgent({ url: cred.body.mcp_url, token: cred.body.token });
    try {
      const tools = (await agent.client.listTools()).tools.map((t) => t.name).sort();
      expect(tools).toEqual(['claim_next', 'create_for', 'list_todos']);
      expect(await agent.refused('create_webhook', { name: 'x' })).toBe('forbidden');
      const narrowed = await alice.call<Edge>('POST', `/friends/${id}/narrow`, {
        verbs: ['create_for', 'list_todos'],
      });
      expect(narrowed.status, narrowed.text).toBe(200);
      expect(narrowed.body.granted_verbs).toEqual(['create_for', 'list_todos']);
      expect(await agent.refused('claim_next')).toBe('forbidden');
      expect((await alice.call('POST', `/friends/${id}/narrow`, { verbs: ['claim_next'] })).status).toBe(400);
      const revoked = await alice.call<Edge>('POST', `/friends/${id}/revoke`, {});
      expect(revoked.body.state).toBe('revoked');
    } finally {
      await agent.close().catch(() => {});
    }
    const after = await fetch(cred.body.mcp_url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${cred.body.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(after.status).toBe(401);
  });
});
