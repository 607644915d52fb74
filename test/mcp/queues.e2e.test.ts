import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operator, readStream } from '../http/api/client.ts';
import { type Agent, connectAgent, settled, startServer, type TestServer } from './support.ts';

const PROXY_ENV = {
  HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1',
  HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User',
};

type Vended = {
  id: string;
  slug: string;
  mcp_url: string;
  token: string;
  queue: string;
  queues: string[];
  webhook: { webhook_id: string; ingest_url: string };
};
type EndpointOut = { id: string; queues: string[]; verbs: string[] };
type Problem = { status: number; code: string; detail: string };
type Claimed = { todo: { id: string; queue: string } | null; lease_id: string | null };
type Listed = { todos: { id: string; queue: string; state: string; event_id: number }[] };

describe('endpoints that drain several queues (API, MCP SDK client)', () => {
  let server: TestServer;
  let alice: Awaited<ReturnType<typeof operator>>;
  const agents: Agent[] = [];
  beforeAll(async () => {
    server = await startServer({ env: PROXY_ENV });
    alice = await operator(server.url, 'alice');
  });
  afterAll(async () => {
    for (const a of agents) await a.close();
    await server?.close();
  });

  const connect = async (v: Vended) => {
    const agent = await connectAgent({ url: v.mcp_url, token: v.token });
    agents.push(agent);
    return agent;
  };
  const vend = async (body: Record<string, unknown>) => {
    const res = await alice.call<Vended>('POST', '/endpoints', body);
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const push = (slug: string, body: Record<string, unknown>) =>
    alice.call<{ id: string; queue: string } & Problem>('POST', `/endpoints/${slug}/todos`, body);

  it('a vend takes queues (1 to 16, never quarantine, not with queue); the first is the webhook’s', async () => {
    const v = await vend({ name: 'Deploy Bot', queues: ['inbox', 'deploys'] });
    expect(v.queues).toEqual(['inbox', 'deploys']);
    expect(v.queue).toBe('inbox');
    const listed = await alice.call<EndpointOut[]>('GET', '/endpoints');
    expect(listed.body.find((e) => e.id === v.id)?.queues).toEqual(['inbox', 'deploys']);

    for (const body of [
      { name: 'x', queues: ['inbox', 'quarantine'] },
      { name: 'x', queue: 'quarantine' },
      { name: 'x', queue: 'inbox', queues: ['inbox'] },
      { name: 'x', queues: Array.from({ length: 17 }, (_, i) => `q${i}`) },
      { name: 'x', queues: [] },
      { name: 'x', queues: ['a', 'a'] },
    ]) {
      const res = await alice.call<Problem>('POST', '/endpoints', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.status).toBe(400);
    }
  });

  it('push needs a queue; the doorbell rings per queue; claim_next takes the oldest across queues or one', async () => {
    const v = await vend({ name: 'Two Queues', queues: ['inbox', 'deploys'] });
    const all = await connect(v);
    const deploysOnly = await connect(v);
    const resources = await all.client.listResources();
    expect(resources.resources.map((r) => r.uri)).toEqual([
      'hookline://queues',
      'hookline://queues/inbox',
      'hookline://queues/deploys',
    ]);
    await all.client.subscribeResource({ uri: 'hookline://queues' });
    await deploysOnly.client.subscribeResource({ uri: 'hookline://queues/deploys' });

    const noQueue = await push(v.slug, { title: 'which queue?' });
    expect(noQueue.status).toBe(400);
    expect(noQueue.body.detail).toMatch(/queue is required/);
    expect((await push(v.slug, { title: 'elsewhere', queue: 'alerts' })).status).toBe(400);

    const first = await push(v.slug, { title: 'deploy api', queue: 'deploys' });
    expect(first.status, first.text).toBe(201);
    const second = await push(v.slug, { title: 'triage', queue: 'inbox' });
    expect(second.status).toBe(201);

    await all.waitForRing('hookline://queues/deploys');
    await all.waitForRing('hookline://queues/inbox');
    await deploysOnly.waitForRing('hookline://queues/deploys');
    await settled(server);
    expect(deploysOnly.rung).not.toContain('hookline://queues/inbox');

    const read = await all.client.readResource({ uri: 'hookline://queues' });
    const counts = JSON.parse((read.contents[0] as { text: string }).text) as {
      queues: { queue: string; pending: number }[];
    };
    expect(counts.queues.map((q) => [q.queue, q.pending])).toEqual([
      ['inbox', 1],
      ['deploys', 1],
    ]);

    const inboxOnly = await all.ok<Listed>('list_todos', { queue: 'inbox' });
    expect(inboxOnly.todos.map((t) => t.id)).toEqual([second.body.id]);
    expect(await all.refused('list_todos', { queue: 'alerts' })).toBe('forbidden');

    const oldest = await all.ok<Claimed>('claim_next', {});
    expect(oldest.todo).toMatchObject({ id: first.body.id, queue: 'deploys' });
    expect((await all.ok<Claimed>('claim_next', { queue: 'deploys' })).todo).toBeNull();
    const fromInbox = await all.ok<Claimed>('claim_next', { queue: 'inbox' });
    expect(fromInbox.todo).toMatchObject({ id: second.body.id, queue: 'inbox' });
  });

  it('routes may target any queue the owner drains, never another or quarantine', async () => {
    const v = await vend({ name: 'Router', queues: ['inbox', 'deploys'] });
    const agent = await connect(v);
    const hook = await agent.ok<{ webhook_id: string }>('create_webhook', { name: 'ci', queue: 'deploys' });
    await agent.ok('add_webhook_route', { webhook_id: hook.webhook_id, queue: 'inbox', event_type: 'ping' });
    expect(await agent.refused('add_webhook_route', { webhook_id: hook.webhook_id, queue: 'alerts' })).toBe(
      'bad_request',
    );
    expect(
      await agent.refused('add_webhook_route', { webhook_id: hook.webhook_id, queue: 'quarantine' }),
    ).toBe('bad_request');
    expect(await agent.refused('create_webhook', { name: 'x', queue: 'alerts' })).toBe('forbidden');
  });

  it('a rule’s { route } and a route to a second queue deliver there; the rest to the webhook’s queue', async () => {
    const v = await vend({ name: 'Sorter', queues: ['inbox', 'deploys', 'alerts'] });
    const agent = await connect(v);
    const webhookId = v.webhook.webhook_id;
    // Rules decide first; routes are the defaults when no rule does (docs/guides/writing-rules.md).
    await agent.ok('add_webhook_rule', {
      webhook_id: webhookId,
      source: "(d) => (d.event_type ?? '').startsWith('deploy') ? { route: 'deploys' } : 'continue'",
    });
    await agent.ok('add_webhook_route', { webhook_id: webhookId, queue: 'alerts', event_type: 'incident' });
    await agent.ok('add_webhook_route', {
      webhook_id: webhookId,
      queue: 'alerts',
      event_type: 'deploy.rollback',
    });
    // A second webhook of the endpoint, on its second queue.
    const ci = await agent.ok<{ webhook_id: string; ingest_url: string }>('create_webhook', {
      name: 'ci',
      queue: 'deploys',
      scheme: 'none',
    });

    const send = async (url: string, type: string) => {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type }),
      });
      expect(res.status, await res.clone().text()).toBe(202);
      return ((await res.json()) as { id: number }).id;
    };
    const deploy = await send(v.webhook.ingest_url, 'deploy.finished');
    const incident = await send(v.webhook.ingest_url, 'incident');
    const push = await send(v.webhook.ingest_url, 'push');
    const rollback = await send(v.webhook.ingest_url, 'deploy.rollback'); // the rule, not the route
    const build = await send(ci.ingest_url, 'build');
    await settled(server);

    // By event id: todos created in the same millisecond list in id order, not sending order.
    const on = async (queue: string) =>
      (await agent.ok<Listed>('list_todos', { queue })).todos
        .map((t) => [t.event_id, t.queue] as const)
        .sort((a, b) => a[0] - b[0]);
    expect(await on('deploys')).toEqual([
      [deploy, 'deploys'],
      [rollback, 'deploys'],
      [build, 'deploys'],
    ]);
    expect(await on('alerts')).toEqual([[incident, 'alerts']]);
    expect(await on('inbox')).toEqual([[push, 'inbox']]);

    const claimed = await agent.ok<Claimed>('claim_next', { queue: 'alerts' });
    expect(claimed.todo).toMatchObject({ queue: 'alerts' });
    expect((await agent.ok<Claimed>('claim_next', { queue: 'alerts' })).todo).toBeNull();
  });

  it('PATCH changes queues (409 with live todos unless move_to) and narrows verbs, as events on the endpoint', async () => {
    const v = await vend({ name: 'Mover', queues: ['inbox', 'deploys'] });
    const agent = await connect(v);
    const pending = await push(v.slug, { title: 'still to do', queue: 'deploys' });
    expect(pending.status).toBe(201);

    const refused = await alice.call<Problem>('PATCH', `/endpoints/${v.slug}`, { queues: ['inbox'] });
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body).toMatchObject({ status: 409, code: 'conflict' });
    expect(refused.body.detail).toMatch(/deploys \(1\)/);

    for (const body of [
      { queues: ['inbox', 'quarantine'] },
      { queues: ['inbox'], move_to: 'quarantine' },
      { queues: ['inbox'], move_to: 'deploys' },
      { verbs: ['claim_next', 'not_a_verb'] },
      {},
      { queues: ['inbox'], extra: true },
    ]) {
      const res = await alice.call<Problem>('PATCH', `/endpoints/${v.slug}`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect((await alice.call('PATCH', `/endpoints/${v.id}x`, { queues: ['inbox'] })).status).toBe(404);
    const bob = await operator(server.url, 'bob');
    expect((await bob.call('PATCH', `/endpoints/${v.slug}`, { queues: ['inbox'] })).status).toBe(404);

    const moved = await alice.call<EndpointOut>('PATCH', `/endpoints/${v.slug}`, {
      queues: ['inbox', 'alerts'],
      move_to: 'inbox',
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.queues).toEqual(['inbox', 'alerts']);
    const listed = await agent.ok<Listed>('list_todos', {});
    expect(listed.todos.find((t) => t.id === pending.body.id)).toMatchObject({ queue: 'inbox' });
    expect(await agent.refused('list_todos', { queue: 'deploys' })).toBe('forbidden');
    expect((await push(v.slug, { title: 'alert', queue: 'alerts' })).status).toBe(201);

    const narrowed = await alice.call<EndpointOut>('PATCH', `/endpoints/${v.slug}`, {
      verbs: ['list_todos', 'claim_next', 'complete'],
    });
    expect(narrowed.status).toBe(200);
    const tools = await agent.client.listTools();
    expect(tools.tools.map((t) => t.name).sort()).toEqual(['claim_next', 'complete', 'list_todos']);
    const widened = await alice.call<Problem>('PATCH', `/endpoints/${v.slug}`, {
      verbs: ['list_todos', 'create_webhook'],
    });
    expect(widened.status).toBe(400);
    expect(widened.body.detail).toMatch(/create_webhook/);

    const events = await readStream(server.runtime.store, `endpoint-${v.id}`);
    expect(events.map((e) => e.type)).toEqual([
      'EndpointVended',
      'EndpointScopeChanged',
      'EndpointScopeChanged',
    ]);
    expect(events[1]?.data).toMatchObject({
      removed_queues: ['deploys'],
      moved_to: 'inbox',
      changed_by: 'alice',
    });
    const todoEvents = await readStream(server.runtime.store, `todo-${pending.body.id}`);
    expect(todoEvents.map((e) => e.type)).toEqual(['TodoCreated', 'TodoMoved']);
  });

  it('a webhook whose queue was removed delivers to the first queue the endpoint still drains', async () => {
    const v = await vend({ name: 'Moved Hook', queues: ['inbox', 'deploys'] });
    const agent = await connect(v);
    const changed = await alice.call<EndpointOut>('PATCH', `/endpoints/${v.slug}`, { queues: ['deploys'] });
    expect(changed.status, changed.text).toBe(200);
    const res = await fetch(v.webhook.ingest_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'ping' }),
    });
    expect(res.status).toBe(202);
    await settled(server);
    const listed = await agent.ok<Listed>('list_todos', {});
    expect(listed.todos.map((t) => t.queue)).toEqual(['deploys']);
  });
});
