import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_VERBS } from '../../src/domain/endpoint/verbs.ts';
import { revokeEndpoint } from '../../src/endpoints/revoke.ts';
import { connectAgent, settled, startServer, type TestServer, vend } from './support.ts';

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

function post(url: string, headers: Record<string, string>, body: unknown = INIT) {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify(body),
  });
}

/** node:http, because fetch will not send a Host header of our choosing. */
function rawPost(url: string, headers: Record<string, string>): Promise<number> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(INIT));
  });
}

describe('MCP transport: Streamable HTTP at /mcp/<slug>, endpoint bearer, rebinding guard', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  let closed = false;
  afterAll(async () => {
    if (!closed) await server?.close();
  });

  it('initializes with serverInfo.version = the service version and lists exactly the vended verbs it implements', async () => {
    const ep = await vend(server);
    const agent = await connectAgent(ep);
    try {
      expect(agent.client.getServerVersion()).toMatchObject({
        name: 'hookline',
        version: server.runtime.config.version,
      });
      expect(agent.client.getServerCapabilities()?.resources?.subscribe).toBe(true);
      const { tools } = await agent.client.listTools();
      // A default vend holds the whole verb catalog (test/mcp/catalog.e2e.test.ts calls each one).
      expect(tools.map((t) => t.name).sort()).toEqual([...ALL_VERBS].sort());
      for (const t of tools) {
        expect(t.inputSchema.type).toBe('object');
        expect(t.annotations).toBeDefined();
      }
      expect(tools.find((t) => t.name === 'list_todos')?.annotations?.readOnlyHint).toBe(true);
    } finally {
      await agent.close();
    }
  });

  it('a verb outside the allowlist is neither listed nor callable: forbidden', async () => {
    const ep = await vend(server, { verbs: ['list_todos', 'get_todo'] });
    const agent = await connectAgent(ep);
    try {
      const { tools } = await agent.client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(['get_todo', 'list_todos']);
      expect(await agent.refused('claim_next')).toBe('forbidden');
      expect(await agent.refused('create_webhook', { name: 'x' })).toBe('forbidden');
      expect(await agent.ok('list_todos')).toMatchObject({ todos: [] });
    } finally {
      await agent.close();
    }
  });

  it('401 with WWW-Authenticate: Bearer and a problem document, and no OAuth hints, for missing, wrong, revoked and expired bearers', async () => {
    const ep = await vend(server);
    const expiring = await vend(server, { expiresAt: new Date(Date.now() + 1500) });
    const other = await vend(server);
    const cases: [string, string, Record<string, string>][] = [
      ['missing', ep.url, {}],
      ['wrong', ep.url, { authorization: 'Bearer hlk_not-a-real-token' }],
      ['another endpoint’s', ep.url, { authorization: `Bearer ${other.token}` }],
      ['unknown slug', `${server.url}/mcp/nobody-aaaaaa`, { authorization: `Bearer ${ep.token}` }],
    ];
    for (const [name, url, headers] of cases) {
      const res = await post(url, headers);
      expect(res.status, name).toBe(401);
      const challenge = res.headers.get('www-authenticate') ?? '';
      expect(challenge, name).toMatch(/^Bearer\b/);
      expect(challenge, name).not.toMatch(/resource_metadata|as_uri|authorization_uri/);
      expect(res.headers.get('content-type'), name).toMatch(/^application\/problem\+json/);
      expect(await res.json(), name).toMatchObject({ status: 401, code: 'unauthorized' });
    }

    // Works, then revoked: 401 from then on, for new and for existing sessions.
    const agent = await connectAgent(ep);
    expect(await agent.ok('list_todos')).toMatchObject({ todos: [] });
    const garble = () =>
      fetch(ep.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${ep.token}`,
        },
        body: '{"jsonrpc": "2.0", "method": ',
      });
    // A valid bearer with a body that does not parse: 400, a problem document.
    const unparsed = await garble();
    expect(unparsed.status).toBe(400);
    expect(unparsed.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    await revokeEndpoint(
      { store: server.runtime.store, clock: server.runtime.clock },
      { ref: ep.slug, operator: 'alice', human: 'alice' },
    );
    // A body that does not parse changes nothing: the bearer is decided first (the state this
    // process kept from the calls above still shows the endpoint as it was before the revoke).
    const garbled = await garble();
    expect(garbled.status).toBe(401);
    expect(garbled.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
    expect((await post(ep.url, { authorization: `Bearer ${ep.token}` })).status).toBe(401);
    await expect(agent.client.listTools()).rejects.toThrow();
    await agent.client.close();

    // Expired (expires_at in the past): 401.
    await new Promise((r) => setTimeout(r, Math.max(0, 1600)));
    expect((await post(expiring.url, { authorization: `Bearer ${expiring.token}` })).status).toBe(401);

    // No protected-resource metadata for /mcp/*.
    for (const path of [
      `/.well-known/oauth-protected-resource/mcp/${ep.slug}`,
      `/mcp/${ep.slug}/.well-known/oauth-protected-resource`,
    ]) {
      expect((await fetch(`${server.url}${path}`)).status, path).toBe(404);
    }
  });

  it('refuses a foreign Host or Origin (DNS rebinding) with 403 before the bearer is looked at', async () => {
    const ep = await vend(server);
    const auth = { authorization: `Bearer ${ep.token}` };
    expect(await rawPost(ep.url, { ...auth, host: 'evil.example' })).toBe(403);
    expect(await rawPost(ep.url, { host: `evil.example:${new URL(server.url).port}` })).toBe(403);
    expect((await post(ep.url, { ...auth, origin: 'https://evil.example' })).status).toBe(403);
    expect((await post(ep.url, { ...auth, origin: 'null' })).status).toBe(403);
    const same = await post(ep.url, { ...auth, origin: server.url });
    expect(same.status).toBe(200);
    await same.body?.cancel();
    const localhost = await rawPost(ep.url.replace('127.0.0.1', 'localhost'), {
      ...auth,
      host: `localhost:${new URL(server.url).port}`,
    });
    expect(localhost).toBe(200);
  });

  it('a session belongs to the endpoint that opened it; unknown sessions are 404; no session is 400', async () => {
    const a = await vend(server);
    const b = await vend(server);
    const agent = await connectAgent(a);
    try {
      const sessionId = agent.transport.sessionId!;
      expect(sessionId).toBeTruthy();
      const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
      const headers = { 'mcp-protocol-version': '2025-06-18' };
      const stolen = await post(
        b.url,
        { ...headers, authorization: `Bearer ${b.token}`, 'mcp-session-id': sessionId },
        list,
      );
      expect(stolen.status).toBe(404);
      const unknown = await post(
        a.url,
        { ...headers, authorization: `Bearer ${a.token}`, 'mcp-session-id': 'nope' },
        list,
      );
      expect(unknown.status).toBe(404);
      const none = await post(a.url, { ...headers, authorization: `Bearer ${a.token}` }, list);
      expect(none.status).toBe(400);
      await settled(server);
    } finally {
      await agent.close();
    }
  });

  // Last: it closes the server.
  it('shutdown ends every open session, notification streams included', async () => {
    const ep = await vend(server);
    const agent = await connectAgent(ep);
    await agent.client.subscribeResource({ uri: 'hookline://queues/inbox' });
    expect(await agent.ok('list_todos')).toMatchObject({ todos: [] });
    closed = true;
    await server.close(); // would hang on the open GET stream if sessions were not ended first
    await expect(agent.client.listTools()).rejects.toThrow();
    await agent.client.close();
  });
});
