import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RULE_VERBS } from '../../src/domain/endpoint/verbs.ts';
import { jsonEvent } from '../../src/eventstore/codec.ts';
import { dispositions, post, startRulesServer } from './rules-support.ts';
import { type Agent, connectAgent, settled, type TestServer, type VendedEndpoint, vend } from './support.ts';

type Ack = { id: number };
type Listed = { version: number; rules: { id: string; position: number; source: string }[] };

// Routing rules end to end: real server, real MCP client, real sandbox process.
describe('routing rules over MCP and POST /webhooks/w/<token>', () => {
  let server: TestServer;
  let ep: VendedEndpoint;
  let agent: Agent;

  beforeAll(async () => {
    server = await startRulesServer();
    ep = await vend(server);
    agent = await connectAgent(ep);
  }, 120_000);
  afterAll(async () => {
    await agent?.close();
    await server?.close();
  });

  const send = async (body: unknown): Promise<number> => {
    const res = await post(ep.ingestUrl, body);
    expect(res.status).toBe(202);
    return ((await res.json()) as Ack).id;
  };

  const fateOf = async (eventId: number) => {
    await settled(server);
    const d = (await dispositions(server, ep.webhookId)).find((x) => x.event_id === eventId);
    const todo = await server.runtime.db
      .selectFrom('todos')
      .select(['id', 'queue'])
      .where('event_id', '=', eventId)
      .executeTakeFirst();
    const log = await server.runtime.db
      .selectFrom('log_events')
      .select(['disposition'])
      .where('id', '=', eventId)
      .executeTakeFirstOrThrow();
    return { d, todo, logDisposition: log.disposition };
  };

  it('answers not_found to every rule and route verb from another endpoint of the same operator', async () => {
    const sibling = await vend(server, { operator: 'alice' });
    const other = await connectAgent(sibling);
    try {
      const args: Record<string, Record<string, unknown>> = {
        set_webhook_rules: { rules: [] },
        add_webhook_rule: { source: "() => 'continue'" },
        update_webhook_rule: { rule_id: 'a', source: "() => 'continue'" },
        move_webhook_rule: { rule_id: 'a', position: 0 },
        remove_webhook_rule: { rule_id: 'a' },
        add_webhook_route: { queue: 'inbox' },
        remove_webhook_route: { route_id: `rt_${'a'.repeat(20)}` },
      };
      for (const verb of RULE_VERBS) {
        expect(await other.refused(verb, { webhook_id: ep.webhookId, ...args[verb] }), verb).toBe(
          'not_found',
        );
      }
      // The owner is answered.
      expect((await agent.ok<Listed>('list_webhook_rules', { webhook_id: ep.webhookId })).rules).toEqual([]);
    } finally {
      await other.close();
    }
  }, 120_000);

  it('without rules, today: a todo on the webhook queue and no disposition', async () => {
    const id = await send({ type: 'plain' });
    const fate = await fateOf(id);
    expect(fate.d).toBeUndefined();
    expect(fate.todo?.queue).toBe('inbox');
    expect(fate.logDisposition).toBeNull();
  }, 60_000);

  it('routes, drops and holds; quarantine is invisible to the agent; list_webhook_events filters', async () => {
    await agent.ok('set_webhook_rules', {
      webhook_id: ep.webhookId,
      rules: [
        { id: 'drop-pings', source: "(d) => d.payload?.type === 'ping' ? { drop: true } : 'continue'" },
        { id: 'hold', source: "(d) => d.payload?.type === 'suspicious' ? { quarantine: true } : 'continue'" },
        { id: 'elsewhere', source: "(d) => d.payload?.type === 'ops' ? { route: 'ops' } : 'continue'" },
        { id: 'inbox', source: "(d) => ({ route: 'inbox' })" },
      ],
    });
    expect(await agent.refused('add_webhook_route', { webhook_id: ep.webhookId, queue: 'quarantine' })).toBe(
      'bad_request',
    );
    const ping = await send({ type: 'ping' });
    const held = await send({ type: 'suspicious' });
    const ops = await send({ type: 'ops' });
    const routed = await send({ type: 'push' });

    expect(await fateOf(ping)).toMatchObject({
      d: { disposition: 'dropped' },
      todo: undefined,
      logDisposition: 'dropped',
    });
    expect(await fateOf(held)).toMatchObject({
      d: { disposition: 'held', rule: { id: 'hold', index: 1 } },
      todo: { queue: 'quarantine' },
    });
    // A route to a queue the owner does not drain fails closed.
    expect(await fateOf(ops)).toMatchObject({
      d: { disposition: 'faulted', reason: 'scope' },
      todo: { queue: 'quarantine' },
    });
    expect(await fateOf(routed)).toMatchObject({
      d: { disposition: 'routed', queue: 'inbox', rules_version: 1 },
      todo: { queue: 'inbox' },
    });

    const heldTodo = (await fateOf(held)).todo!;
    const listed = await agent.ok<{ todos: { todo_id?: string; id?: string }[] }>('list_todos', {});
    expect(JSON.stringify(listed)).not.toContain(heldTodo.id);
    expect(await agent.refused('claim', { todo_id: heldTodo.id })).toBe('not_found');

    const faulted = await agent.ok<{ events: { id: number; disposition: string }[] }>('list_webhook_events', {
      webhook_id: ep.webhookId,
      disposition: 'faulted',
    });
    expect(faulted.events.map((e) => e.id)).toContain(ops);
    expect(faulted.events.every((e) => e.disposition === 'faulted')).toBe(true);
    await agent.ok('set_webhook_rules', { webhook_id: ep.webhookId, rules: [] });
  }, 120_000);

  it('refuses a save that would fault on a recent delivery, listing the cases, and saves nothing', async () => {
    const recent = await send({ type: 'no-nested' });
    await settled(server);
    const r = await agent.call('add_webhook_rule', {
      webhook_id: ep.webhookId,
      id: 'brittle',
      source: '(d) => ({ route: d.payload.nested.queue })',
    });
    expect(r.isError).toBe(true);
    const refusal = r.structuredContent as { code: string; faults: { event_id: number; reason: string }[] };
    expect(refusal.code).toBe('rules_rejected');
    expect(refusal.faults).toContainEqual(expect.objectContaining({ event_id: recent, reason: 'threw' }));
    expect((await agent.ok<Listed>('list_webhook_rules', { webhook_id: ep.webhookId })).rules).toEqual([]);

    // test_webhook_rules dry-runs one recent delivery by event_id, saving nothing.
    const tried = await agent.ok<{ ok: boolean; outcomes: { event_id: number; disposition: string }[] }>(
      'test_webhook_rules',
      { webhook_id: ep.webhookId, event_id: recent, rules: [{ id: 'x', source: '() => ({ drop: true })' }] },
    );
    expect(tried).toMatchObject({ ok: true, outcomes: [{ event_id: recent, disposition: 'dropped' }] });
  }, 120_000);

  // Point 8: each passes the save dry run, faults only on a payload sent afterwards, and ends
  // faulted in quarantine with the service healthy after.
  // Memory exhaustion ends on whichever limit is met first: the heap, the CPU budget (a loaded
  // machine makes isolate time run like wall time), the deadline, or the sandbox process dying.
  const EXHAUSTED = ['memory', 'cpu', 'timeout', 'crashed'];
  const matrix: { name: string; source: string; reasons: string[] }[] = [
    { name: 'while(1){}', source: '(d) => { while (1) {} }', reasons: ['timeout', 'cpu'] },
    {
      name: 'an endless loop inside a promise callback',
      source: "(d) => { Promise.resolve().then(() => { while (1) {} }); return 'continue'; }",
      reasons: ['timeout', 'cpu'],
    },
    {
      name: 'new Array(1e9).fill(0)',
      source: '(d) => { new Array(1e9).fill(0); }',
      reasons: EXHAUSTED,
    },
    {
      name: 'a 100 MB string',
      source:
        "(d) => { const s = 'x'.repeat(100 * 1024 * 1024); return s.endsWith('x') ? { route: 'inbox' } : 'continue'; }",
      reasons: EXHAUSTED,
    },
    {
      name: "this.constructor.constructor('return process')()",
      source: "(d) => this.constructor.constructor('return process')()",
      reasons: ['threw'],
    },
    { name: 'throwing a non-Error', source: '(d) => { throw 42; }', reasons: ['threw'] },
  ];

  for (const [i, c] of matrix.entries()) {
    it(`${c.name}: faulted in quarantine, service healthy after`, async () => {
      const trigger = `boom-${i}`;
      // Hostile only for its trigger: every earlier delivery passes, so the save dry run accepts it.
      const guarded = `(d) => d.payload?.trigger === '${trigger}' ? (${c.source})(d) : 'continue'`;
      await agent.ok('set_webhook_rules', {
        webhook_id: ep.webhookId,
        rules: [
          { id: 'hostile', source: guarded },
          { id: 'inbox', source: "() => ({ route: 'inbox' })" },
        ],
      });
      const id = await send({ trigger });
      const fate = await fateOf(id);
      expect(fate.d?.disposition).toBe('faulted');
      expect(c.reasons).toContain(fate.d?.reason);
      expect(fate.todo?.queue).toBe('quarantine');
      expect(fate.logDisposition).toBe('faulted');

      const health = await fetch(`${server.url}/healthz`);
      expect(health.status).toBe(200);
      const after = await send({ trigger: 'none' });
      expect(await fateOf(after)).toMatchObject({ d: { disposition: 'routed' }, todo: { queue: 'inbox' } });
    }, 180_000);
  }

  it('a rule that no longer compiles (appended directly, as an upgrade would leave it) faults every delivery', async () => {
    const listed = await agent.ok<Listed>('list_webhook_rules', { webhook_id: ep.webhookId });
    await server.runtime.store.append(`webhook-${ep.webhookId}`, [
      jsonEvent('WebhookRulesSet', {
        webhook_id: ep.webhookId,
        by: 'upgrade',
        at: new Date().toISOString(),
        version: listed.version + 1,
        rules: [{ id: 'legacy', source: '(d) => d.payload?.[' }],
      }),
    ]);
    const id = await send({ type: 'after-upgrade' });
    const fate = await fateOf(id);
    expect(fate.d).toMatchObject({
      disposition: 'faulted',
      reason: 'compile',
      rules_version: listed.version + 1,
    });
    expect(fate.todo?.queue).toBe('quarantine');
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    await agent.ok('set_webhook_rules', { webhook_id: ep.webhookId, rules: [] });
  }, 120_000);
});
