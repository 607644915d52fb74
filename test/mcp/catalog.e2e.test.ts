import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_VERBS, DEFAULT_VERBS, DRAIN_VERBS, type Verb } from '../../src/domain/endpoint/verbs.ts';
import { UNTRUSTED_NOTE } from '../../src/mcp/present.ts';
import { operator } from '../http/api/client.ts';
import { connectAgent, startServer, type TestServer } from './support.ts';

const UNKNOWN_TODO = 'td_aaaaaaaaaaaaaaaaaaaa';
const UNKNOWN_WEBHOOK = 'wh_aaaaaaaaaaaaaaaaaaaa';
const LEASE = 'ls_aaaaaaaaaaaaaaaaaaaa';

/**
 * One call per verb whose answer only its handler can give: a result (`ok`) or a refusal code
 * that the tool itself decides (an unknown todo, webhook or delivery is `not_found`). A verb that
 * is not served would be a protocol error; one the endpoint does not hold, `forbidden`.
 */
const probes: {
  readonly [V in Verb]: (own: { webhookId: string }) => { args: Record<string, unknown>; expect: string };
} = {
  list_todos: () => ({ args: {}, expect: 'ok' }),
  get_todo: () => ({ args: { todo_id: UNKNOWN_TODO }, expect: 'not_found' }),
  claim: () => ({ args: { todo_id: UNKNOWN_TODO }, expect: 'not_found' }),
  claim_next: () => ({ args: {}, expect: 'ok' }),
  complete: () => ({ args: { todo_id: UNKNOWN_TODO, lease_id: LEASE }, expect: 'not_found' }),
  fail: () => ({ args: { todo_id: UNKNOWN_TODO, lease_id: LEASE, reason: 'probe' }, expect: 'not_found' }),
  release: () => ({ args: { todo_id: UNKNOWN_TODO, lease_id: LEASE }, expect: 'not_found' }),
  heartbeat: () => ({ args: { todo_id: UNKNOWN_TODO, lease_id: LEASE }, expect: 'not_found' }),
  list_events: () => ({ args: {}, expect: 'ok' }),
  get_event: () => ({ args: { event_id: 999_999_999 }, expect: 'not_found' }),
  create_for: () => ({ args: { friend_id: 'fr_aaaaaaaaaaaaaaaaaaaa', title: 'probe' }, expect: 'not_found' }),
  list_friends: () => ({ args: {}, expect: 'ok' }),
  create_webhook: () => ({ args: { name: 'probe' }, expect: 'ok' }),
  list_webhooks: () => ({ args: {}, expect: 'ok' }),
  list_webhook_events: () => ({ args: {}, expect: 'ok' }),
  replay_webhook_event: () => ({ args: { event_id: 999_999_999 }, expect: 'not_found' }),
  rotate_webhook_secret: () => ({ args: { webhook_id: UNKNOWN_WEBHOOK }, expect: 'not_found' }),
  list_webhook_rules: (own) => ({ args: { webhook_id: own.webhookId }, expect: 'ok' }),
  set_webhook_rules: () => ({ args: { webhook_id: UNKNOWN_WEBHOOK, rules: [] }, expect: 'not_found' }),
  add_webhook_rule: () => ({
    args: { webhook_id: UNKNOWN_WEBHOOK, source: "() => 'continue'" },
    expect: 'not_found',
  }),
  update_webhook_rule: () => ({
    args: { webhook_id: UNKNOWN_WEBHOOK, rule_id: 'r1', source: "() => 'continue'" },
    expect: 'not_found',
  }),
  move_webhook_rule: () => ({
    args: { webhook_id: UNKNOWN_WEBHOOK, rule_id: 'r1', position: 0 },
    expect: 'not_found',
  }),
  remove_webhook_rule: () => ({ args: { webhook_id: UNKNOWN_WEBHOOK, rule_id: 'r1' }, expect: 'not_found' }),
  test_webhook_rules: () => ({ args: { webhook_id: UNKNOWN_WEBHOOK }, expect: 'not_found' }),
  list_webhook_routes: (own) => ({ args: { webhook_id: own.webhookId }, expect: 'ok' }),
  add_webhook_route: () => ({ args: { webhook_id: UNKNOWN_WEBHOOK, queue: 'inbox' }, expect: 'not_found' }),
  remove_webhook_route: () => ({
    args: { webhook_id: UNKNOWN_WEBHOOK, route_id: 'rt_aaaaaaaaaaaaaaaaaaaa' },
    expect: 'not_found',
  }),
};

type Vended = {
  slug: string;
  token: string;
  mcp_url: string;
  verbs: string[];
  webhook: { webhook_id: string };
};

describe('the verb catalog: what is vended is exactly what is served', () => {
  let server: TestServer;
  let alice: Awaited<ReturnType<typeof operator>>;
  beforeAll(async () => {
    server = await startServer({
      env: { HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1', HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User' },
    });
    alice = await operator(server.url, 'alice');
  });
  afterAll(async () => {
    await server?.close();
  });

  const vendOver = async (verbs?: readonly string[]): Promise<Vended> => {
    const res = await alice.call<Vended>('POST', '/endpoints', {
      name: `catalog ${verbs?.join(' ') ?? 'default'}`,
      ...(verbs ? { verbs } : {}),
    });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };

  /** The catalog verbs the server's instructions name, as whole words (claim is not claim_next). */
  const namedIn = (instructions: string) =>
    ALL_VERBS.filter((v) => new RegExp(`(^|[^a-z_])${v}($|[^a-z_])`).test(instructions));

  /**
   * tools/list over the MCP SDK client shows exactly `verbs`; each one reaches its handler; the
   * instructions name exactly them, and the queue resources only to an endpoint that drains.
   */
  const servesExactly = async (vended: Vended, verbs: readonly Verb[]) => {
    const agent = await connectAgent({ url: vended.mcp_url, token: vended.token });
    try {
      const instructions = agent.client.getInstructions() ?? '';
      expect(namedIn(instructions)).toEqual(ALL_VERBS.filter((v) => verbs.includes(v)));
      const drains = verbs.some((v) => (DRAIN_VERBS as readonly string[]).includes(v));
      expect(instructions.includes('hookline://queues'), instructions).toBe(drains);
      expect(instructions).toContain(UNTRUSTED_NOTE);
      const { tools } = await agent.client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([...verbs].sort());
      for (const verb of verbs) {
        const probe = probes[verb]({ webhookId: vended.webhook.webhook_id });
        const result = await agent.call(verb, probe.args);
        const got = result.isError ? (result.structuredContent as { code: string }).code : 'ok';
        expect(`${verb}: ${got}`, JSON.stringify(result.structuredContent)).toBe(`${verb}: ${probe.expect}`);
      }
      const outside = ALL_VERBS.find((v) => !verbs.includes(v));
      if (outside) {
        const result = await agent.call(
          outside,
          probes[outside]({ webhookId: vended.webhook.webhook_id }).args,
        );
        expect(result.structuredContent).toMatchObject({ code: 'forbidden' });
      }
    } finally {
      await agent.close();
    }
  };

  it('a default vend holds every verb of the catalog and is served each of them', async () => {
    const vended = await vendOver();
    expect(vended.verbs).toEqual([...DEFAULT_VERBS]);
    await servesExactly(vended, DEFAULT_VERBS);
  });

  it('the instructions of a list_events-only vend speak of events, never of todos, leases or queues', async () => {
    const vended = await vendOver(['list_events']);
    const agent = await connectAgent({ url: vended.mcp_url, token: vended.token });
    try {
      const instructions = agent.client.getInstructions() ?? '';
      expect(instructions).toMatch(/^hookline: /);
      expect(instructions).toContain('list_events lists the accepted deliveries');
      // The untrusted note is the same for every endpoint (it names a todo as a source of content).
      expect(instructions.replace(UNTRUSTED_NOTE, '')).not.toMatch(/todo|lease|queue|rule|friend/i);
      expect(namedIn(instructions)).toEqual(['list_events']);
    } finally {
      await agent.close();
    }
  });

  it.each(ALL_VERBS.map((v) => [v]))('a vend of %s alone lists and serves that verb only', async (verb) => {
    const vended = await vendOver([verb]);
    expect(vended.verbs).toEqual([verb]);
    await servesExactly(vended, [verb]);
  });

  it('a vend naming a verb outside the catalog is refused with 400 naming it, and mints nothing', async () => {
    const before = await alice.call<unknown[]>('GET', '/endpoints');
    for (const unknown of ['befriend_everyone', 'drop_tables']) {
      const res = await alice.call<{ detail: string; code: string }>('POST', '/endpoints', {
        name: 'catalog unknown',
        verbs: ['list_todos', unknown],
      });
      expect(res.status, res.text).toBe(400);
      expect(res.body.code).toBe('invalid_body');
      expect(res.body.detail).toContain(`unknown verb "${unknown}"`);
    }
    expect((await alice.call<unknown[]>('GET', '/endpoints')).body).toEqual(before.body);
  });

  it('a change naming a verb outside the catalog is refused with 400 naming it, and changes nothing', async () => {
    const vended = await vendOver(['list_todos', 'claim_next']);
    for (const unknown of ['befriend_everyone', 'drop_tables']) {
      const res = await alice.call<{ detail: string; code: string }>('PATCH', `/endpoints/${vended.slug}`, {
        verbs: ['list_todos', unknown],
      });
      expect(res.status, res.text).toBe(400);
      expect(res.body.code).toBe('invalid_body');
      expect(res.body.detail).toContain(`unknown verb "${unknown}"`);
    }
    const listed = await alice.call<{ slug: string; verbs: string[] }[]>('GET', '/endpoints');
    expect(listed.body.find((e) => e.slug === vended.slug)?.verbs).toEqual(['list_todos', 'claim_next']);
  });
});
