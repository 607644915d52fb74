import { describe, expect, it } from 'vitest';
import { findTodo } from '../../../projections/todos.queries.ts';
import { ALL_VERBS } from '../../../src/domain/endpoint/verbs.ts';
import type { TestServer } from '../../auth/server.ts';
import { type ApiResponse, delivery, operator, readStream, settled } from './client.ts';

type Vended = {
  id: string;
  agent_id: string;
  agent_name: string;
  slug: string;
  mcp_url: string;
  token: string;
  queue: string;
  verbs: string[];
  webhook: { webhook_id: string; ingest_url: string; trust_mode: string };
  mcp_json: { mcpServers: Record<string, { type: string; url: string; headers: Record<string, string> }> };
  expires_at: string | null;
  replay_targets: string[];
};
type Pushed = {
  id: string;
  endpoint_id: string;
  slug: string;
  queue: string;
  state: string;
  created: boolean;
  event_id: number;
};
type Problem = { type: string; title: string; status: number; detail: string; code: string };

const expectProblem = (res: ApiResponse, status: number) => {
  expect(res.status, res.text).toBe(status);
  expect(res.contentType).toMatch(/^application\/json/);
  expect(res.body).toMatchObject({
    status,
    title: expect.any(String),
    type: expect.stringMatching(/^urn:hookline:problem:/),
  });
};

/**
 * Every status code of spec 4.10-4.13 against a running server, signed in through the real
 * OAuth flow. Operators are named by a trusted forward-auth proxy so that two of them exist.
 */
export function operatorApiSuite(name: string, getServer: () => TestServer) {
  describe(`operator API (${name})`, () => {
    const unique = () => Math.random().toString(36).slice(2, 8);
    let n = 0;
    const agentName = () => `Agent ${unique()} ${++n}`;

    it('vends an endpoint: 201 with every VendEndpointOut field, the credential once, mcp_json ready to paste', async () => {
      const server = getServer();
      const alice = await operator(server.url, 'alice');
      const name = agentName();
      const res = await alice.call<Vended>('POST', '/endpoints', { name });
      expect(res.status, res.text).toBe(201);
      const v = res.body;
      expect(v.id).toMatch(/^ep_[a-z2-7]{20}$/);
      expect(v.agent_id).toMatch(/^ag_/);
      expect(v.agent_name).toBe(name);
      expect(v.slug).toMatch(/^agent-[a-z0-9]+-\d+-[a-z2-7]{6}$/);
      expect(v.mcp_url).toBe(`${server.url}/mcp/${v.slug}`);
      expect(v.token).toMatch(/^hlk_[A-Za-z0-9_-]{43}$/);
      expect(v.queue).toBe('inbox');
      expect(v.verbs).toEqual([...ALL_VERBS]);
      expect(v.webhook.trust_mode).toBe('token');
      expect(v.webhook.webhook_id).toMatch(/^wh_/);
      expect(v.webhook.ingest_url).toMatch(new RegExp(`^${server.url}/webhooks/w/[A-Za-z0-9_-]{43}$`));
      expect(v.mcp_json.mcpServers[v.slug]).toEqual({
        type: 'http',
        url: v.mcp_url,
        headers: { Authorization: `Bearer ${v.token}` },
      });
      expect(v.expires_at).toBeNull();
      expect(v.replay_targets).toEqual([]);

      // Nothing secret entered the log: the streams hold hashes only.
      const ingestToken = v.webhook.ingest_url.split('/').pop()!;
      for (const stream of [`endpoint-${v.id}`, `webhook-${v.webhook.webhook_id}`]) {
        const events = await readStream(server.runtime.store, stream);
        expect(events.length).toBe(1);
        const raw = JSON.stringify(events.map((e) => e.data));
        expect(raw).not.toContain(v.token);
        expect(raw).not.toContain(ingestToken);
      }

      // The list never carries a credential; the agent is listed.
      await settled(server);
      const list = await alice.call<Record<string, unknown>[]>('GET', '/endpoints');
      expect(list.status).toBe(200);
      const row = list.body.find((e) => e.id === v.id);
      expect(row).toMatchObject({
        slug: v.slug,
        agent_name: name,
        state: 'active',
        queues: ['inbox'],
        verbs: [...ALL_VERBS],
        expires_at: null,
        replay_targets: [],
      });
      expect(list.text).not.toContain(v.token);
      expect(list.text).not.toContain(ingestToken);
      const agents = await alice.call<{ id: string; name: string }[]>('GET', '/agents');
      expect(agents.status).toBe(200);
      expect(agents.body).toContainEqual({ id: v.agent_id, name });
    });

    it('vending again under a name reuses the agent; verbs, expires_at and replay targets are kept', async () => {
      const alice = await operator(getServer().url, 'alice');
      const name = agentName();
      const first = await alice.call<Vended>('POST', '/endpoints', { name });
      const expires = new Date(Date.now() + 86_400_000).toISOString();
      const second = await alice.call<Vended>('POST', '/endpoints', {
        name,
        queue: 'builds',
        verbs: ['claim', 'list_todos', 'claim'],
        expires_at: expires,
        replay_targets: ['https://1.1.1.1/replay'],
      });
      expect(second.status, second.text).toBe(201);
      expect(second.body.agent_id).toBe(first.body.agent_id);
      expect(second.body.slug).not.toBe(first.body.slug);
      expect(second.body.queue).toBe('builds');
      expect(second.body.verbs).toEqual(['list_todos', 'claim']);
      expect(second.body.expires_at).toBe(expires);
      expect(second.body.replay_targets).toEqual(['https://1.1.1.1/replay']);
      await settled(getServer());
      const agents = await alice.call<{ id: string; name: string }[]>('GET', '/agents');
      expect(agents.body.filter((a) => a.name === name)).toHaveLength(1);
      const list = await alice.call<{ id: string; replay_targets: string[] }[]>('GET', '/endpoints');
      expect(list.body.find((e) => e.id === second.body.id)?.replay_targets).toEqual([
        'https://1.1.1.1/replay',
      ]);
    });

    it('refuses an invalid vend with 400 and mints nothing', async () => {
      const alice = await operator(getServer().url, 'alice');
      await settled(getServer());
      const before = await alice.call<unknown[]>('GET', '/endpoints');
      const agentsBefore = await alice.call<unknown[]>('GET', '/agents');
      const bad: unknown[] = [
        {},
        { name: '' },
        { name: '   ' },
        { name: 'x', queue: 'quarantine' },
        { name: 'x', queue: 'Not A Queue' },
        { name: 'x', verbs: ['drop_tables'] },
        { name: 'x', verbs: [] },
        { name: 'x', expires_at: '2001-01-01T00:00:00Z' },
        { name: 'x', expires_at: 'tomorrow' },
        { name: 'x', replay_targets: ['http://hooks.example.com/'] },
        { name: 'x', replay_targets: ['https://127.0.0.1/'] },
        { name: 'x', replay_targets: ['https://169.254.169.254/latest'] },
        { name: 'x', replay_targets: ['https://localhost/'] },
        { name: 'x', replay_targets: ['https://1.1.1.1/', 'https://10.0.0.1/'] },
        { name: 'x', unknown_field: 1 },
        [],
        'not json at all',
      ];
      for (const body of bad) expectProblem(await alice.call('POST', '/endpoints', body), 400);
      expectProblem(await alice.call('POST', '/endpoints', 'name=x', { 'content-type': 'text/plain' }), 400);
      expectProblem(await alice.call('POST', '/endpoints', '{"name":', {}), 400);
      const quarantine = await alice.call<Problem>('POST', '/endpoints', { name: 'x', queue: 'quarantine' });
      expect(quarantine.body.detail).toMatch(/quarantine/);
      const metadata = await alice.call<Problem>('POST', '/endpoints', {
        name: 'x',
        replay_targets: ['https://169.254.169.254/latest'],
      });
      expect(metadata.body.detail).toMatch(/cloud metadata/);
      await settled(getServer());
      expect((await alice.call<unknown[]>('GET', '/endpoints')).body).toEqual(before.body);
      expect((await alice.call<unknown[]>('GET', '/agents')).body).toEqual(agentsBefore.body);
    });

    it('answers 401 on every route without an operator bearer', async () => {
      const { url } = getServer();
      for (const [method, path] of [
        ['GET', '/agents'],
        ['GET', '/endpoints'],
        ['POST', '/endpoints'],
        ['POST', '/endpoints/x/todos'],
        ['POST', '/endpoints/x/revoke'],
      ] as const) {
        const res = await fetch(`${url}/api/v1${path}`, {
          method,
          headers: { 'content-type': 'application/json' },
          ...(method === 'POST' ? { body: '{}' } : {}),
        });
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      }
    });

    it('pushes a todo: 201 pending, recorded as a verified operator delivery naming the human, doorbell rung', async () => {
      const server = getServer();
      const alice = await operator(server.url, 'alice');
      const v = (await alice.call<Vended>('POST', '/endpoints', { name: agentName() })).body;
      const res = await alice.call<Pushed>('POST', `/endpoints/${v.slug}/todos`, {
        title: 'Triage the failing build',
        payload: { build: 42, tags: ['ci'] },
      });
      expect(res.status, res.text).toBe(201);
      expect(res.body).toMatchObject({
        endpoint_id: v.id,
        slug: v.slug,
        queue: 'inbox',
        state: 'pending',
        created: true,
      });
      expect(res.body.id).toMatch(/^td_/);
      expect(Number.isInteger(res.body.event_id)).toBe(true);

      const d = await delivery(server.runtime.store, res.body.event_id);
      expect(d?.metadata).toMatchObject({
        provider: 'operator',
        family: 'operator',
        trust_mode: 'operator',
        verified: true,
        route: { endpoint_id: v.id, todo_id: res.body.id, queue: 'inbox' },
      });
      expect(String(d?.metadata?.verify_detail)).toContain('alice');
      expect(JSON.stringify(d?.metadata?.headers)).not.toContain(alice.tokens.access_token);
      expect(JSON.parse(d!.body)).toMatchObject({
        title: 'Triage the failing build',
        payload: { build: 42 },
      });

      const bell = await readStream(server.runtime.store, `doorbell-${v.id}`);
      expect(bell.map((e) => e.data)).toContainEqual(
        expect.objectContaining({
          endpoint_id: v.id,
          todo_id: res.body.id,
          queue: 'inbox',
          event_id: res.body.event_id,
        }),
      );
      await settled(server);
      const row = await findTodo(server.runtime.db, res.body.id);
      expect(row).toMatchObject({
        kind: 'operator',
        state: 'pending',
        queue: 'inbox',
        operator: 'alice',
        key: null,
      });
      expect(row?.payload).toEqual({ build: 42, tags: ['ci'] });

      // By id as well as by slug; an explicit queue in scope and a kind.
      const byId = await alice.call<Pushed>('POST', `/endpoints/${v.id}/todos`, {
        title: 'Second',
        queue: 'inbox',
        kind: 'review',
      });
      expect(byId.status).toBe(201);
      await settled(server);
      expect((await findTodo(server.runtime.db, byId.body.id))?.kind).toBe('review');
    });

    it('answers a key matching a live todo with the same todo, created=false, nothing minted or rung', async () => {
      const server = getServer();
      const alice = await operator(server.url, 'alice');
      const v = (await alice.call<Vended>('POST', '/endpoints', { name: agentName() })).body;
      const first = await alice.call<Pushed>('POST', `/endpoints/${v.slug}/todos`, {
        title: 'Once',
        key: 'deploy-1',
      });
      const again = await alice.call<Pushed>('POST', `/endpoints/${v.slug}/todos`, {
        title: 'Once more',
        key: 'deploy-1',
      });
      expect(first.body.created).toBe(true);
      expect(again.status).toBe(201);
      expect(again.body).toEqual({ ...first.body, created: false });
      const other = await alice.call<Pushed>('POST', `/endpoints/${v.slug}/todos`, {
        title: 'Other',
        key: 'deploy-2',
      });
      expect(other.body.created).toBe(true);
      expect(other.body.id).not.toBe(first.body.id);
      expect(await readStream(server.runtime.store, `doorbell-${v.id}`)).toHaveLength(2);
      // Keys are per endpoint.
      const v2 = (await alice.call<Vended>('POST', '/endpoints', { name: agentName() })).body;
      const elsewhere = await alice.call<Pushed>('POST', `/endpoints/${v2.slug}/todos`, {
        title: 'Once',
        key: 'deploy-1',
      });
      expect(elsewhere.body.created).toBe(true);
    });

    it('refuses a bad push with 400: empty, over-long or multi-line title, queue out of scope, over-long key', async () => {
      const alice = await operator(getServer().url, 'alice');
      const v = (await alice.call<Vended>('POST', '/endpoints', { name: agentName() })).body;
      const bad: unknown[] = [
        {},
        { title: '' },
        { title: ' ' },
        { title: 'x'.repeat(201) },
        { title: 'two\nlines' },
        { title: 'ok', queue: 'elsewhere' },
        { title: 'ok', key: 'k'.repeat(257) },
        { title: 'ok', kind: '' },
        { title: 'ok', extra: true },
        { title: 42 },
      ];
      for (const body of bad)
        expectProblem(await alice.call('POST', `/endpoints/${v.slug}/todos`, body), 400);
      const scope = await alice.call<Problem>('POST', `/endpoints/${v.slug}/todos`, {
        title: 'ok',
        queue: 'elsewhere',
      });
      expect(scope.body.detail).toMatch(/scope/);
      expect(
        (await alice.call('POST', `/endpoints/${v.slug}/todos`, { title: 'x'.repeat(200) })).status,
      ).toBe(201);
      expect(
        (await alice.call('POST', `/endpoints/${v.slug}/todos`, { title: 'ok', key: 'k'.repeat(256) }))
          .status,
      ).toBe(201);
    });

    it('answers 404 alike for an unknown endpoint and another operator’s, and 409 once revoked', async () => {
      const server = getServer();
      const alice = await operator(server.url, 'alice');
      const bob = await operator(server.url, 'bob');
      const v = (await alice.call<Vended>('POST', '/endpoints', { name: agentName() })).body;

      const foreign = await bob.call<Problem>('POST', `/endpoints/${v.slug}/todos`, { title: 'hi' });
      const foreignById = await bob.call<Problem>('POST', `/endpoints/${v.id}/todos`, { title: 'hi' });
      const unknown = await bob.call<Problem>('POST', '/endpoints/no-such-endpoint-abcdef/todos', {
        title: 'hi',
      });
      const unknownId = await bob.call<Problem>('POST', '/endpoints/ep_aaaaaaaaaaaaaaaaaaaa/todos', {
        title: 'hi',
      });
      for (const res of [foreign, foreignById, unknown, unknownId]) expectProblem(res, 404);
      expect(foreign.body.detail).toBe(unknown.body.detail);
      await settled(server);
      expect((await bob.call<unknown[]>('GET', '/endpoints')).text).not.toContain(v.id);
      expectProblem(await bob.call('POST', `/endpoints/${v.slug}/revoke`), 404);

      const revoked = await alice.call<{ state: string; revoked_at: string }>(
        'POST',
        `/endpoints/${v.slug}/revoke`,
      );
      expect(revoked.status).toBe(200);
      expect(revoked.body.state).toBe('revoked');
      const twice = await alice.call<{ state: string; revoked_at: string }>(
        'POST',
        `/endpoints/${v.id}/revoke`,
      );
      expect(twice.status).toBe(200);
      expect(twice.body.revoked_at).toBe(revoked.body.revoked_at);
      await settled(server);
      const list = await alice.call<{ id: string; state: string }[]>('GET', '/endpoints');
      expect(list.body.find((e) => e.id === v.id)?.state).toBe('revoked');

      const refused = await alice.call<Problem>('POST', `/endpoints/${v.slug}/todos`, { title: 'too late' });
      expectProblem(refused, 409);
      expect(refused.body.detail).toMatch(/revoked/);
      // Another operator still hears 404, not 409: revocation is no hint of existence.
      expectProblem(await bob.call('POST', `/endpoints/${v.slug}/todos`, { title: 'hi' }), 404);
      expectProblem(await alice.call('POST', '/endpoints/nope-zzzzzz/revoke'), 404);
    });

    it('serves the OpenAPI document generated from the schemas', async () => {
      const res = await fetch(`${getServer().url}/api/v1/openapi.json`);
      expect(res.status).toBe(200);
      const doc = (await res.json()) as {
        openapi: string;
        paths: Record<string, unknown>;
        components: {
          schemas: Record<string, { required?: string[]; properties?: Record<string, unknown> }>;
        };
      };
      expect(doc.openapi).toBe('3.1.0');
      expect(Object.keys(doc.paths)).toEqual(
        expect.arrayContaining([
          '/agents',
          '/endpoints',
          '/endpoints/{ref}/todos',
          '/endpoints/{ref}/revoke',
        ]),
      );
      expect(doc.components.schemas.VendEndpointIn?.required).toEqual(['name']);
      expect(doc.components.schemas.PushTodoIn?.required).toEqual(['title']);
      expect(doc.components.schemas.VendEndpointOut?.required).toEqual(
        expect.arrayContaining(['agent_name', 'slug', 'mcp_url', 'token', 'queue', 'verbs', 'webhook']),
      );
      expect(doc.components.schemas.PushTodoOut?.required).toEqual(
        expect.arrayContaining(['id', 'endpoint_id', 'slug', 'queue', 'state', 'created', 'event_id']),
      );
    });
  });
}
