import { describe, expect, it } from 'vitest';
import { listAgents } from '../../projections/agents.queries.ts';
import { handleCommand } from '../../src/commands/handle-command.ts';
import { agentNameDecider } from '../../src/domain/agent/decide.ts';
import { agentStream } from '../../src/domain/agent/events.ts';
import { agentNameStream, ensureAgent } from '../../src/endpoints/agents.ts';
import { newId, sha256Hex } from '../../src/ids.ts';
import { readStream } from '../http/api/client.ts';
import { useTestRuntime } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/** ensureAgent: one agent per (operator, name), reserved on its name stream, then registered. */
describe.runIf(hasPg)('ensureAgent (PostgreSQL)', () => {
  const suite = useTestRuntime('hookline_endpoints_agents');
  const deps = () => ({ store: suite.runtime.store, clock: suite.runtime.clock });

  it('the name stream is the hash of operator and name, so any characters give a short id', () => {
    expect(agentNameStream('alice', 'a b/c ✓')).toBe(`agent-name-${sha256Hex('alice\na b/c ✓')}`);
    expect(agentNameStream('alice', 'x')).not.toBe(agentNameStream('bob', 'x'));
  });

  it('reserves the name, then registers the agent; the second call reuses it', async () => {
    const { store } = suite.runtime;
    const first = await ensureAgent(deps(), { operator: 'alice', name: 'Reviewer' });
    expect(first).toEqual({
      agentId: expect.stringMatching(/^ag_[a-z2-7]{20}$/),
      name: 'Reviewer',
      created: true,
    });
    const again = await ensureAgent(deps(), { operator: 'alice', name: 'Reviewer' });
    expect(again).toEqual({ agentId: first.agentId, name: 'Reviewer', created: false });

    expect(
      (await readStream(store, agentNameStream('alice', 'Reviewer'))).map((e) => [e.type, e.data]),
    ).toEqual([['AgentNameReserved', { agent_id: first.agentId, operator: 'alice', name: 'Reviewer' }]]);
    const agent = await readStream(store, agentStream(first.agentId));
    expect(agent.map((e) => e.type)).toEqual(['AgentRegistered']);
    expect(agent[0]!.data).toMatchObject({ agent_id: first.agentId, operator: 'alice', name: 'Reviewer' });
  });

  it('sixteen concurrent calls for one name make one agent, created once', async () => {
    const { store, db, projections } = suite.runtime;
    const all = await Promise.all(
      Array.from({ length: 16 }, () => ensureAgent(deps(), { operator: 'alice', name: 'crowd' })),
    );
    expect(new Set(all.map((a) => a.agentId)).size).toBe(1);
    expect(all.filter((a) => a.created)).toHaveLength(1);
    expect(await readStream(store, agentNameStream('alice', 'crowd'))).toHaveLength(1);
    expect(await readStream(store, agentStream(all[0]!.agentId))).toHaveLength(1);

    await projections.waitFor(await store.committedPosition(), { projection: 'agents', timeoutMs: 10_000 });
    expect((await listAgents(db, 'alice')).filter((a) => a.name === 'crowd').map((a) => a.id)).toEqual([
      all[0]!.agentId,
    ]);
  });

  it('a reservation left without its agent (a crash between the two) is registered by the next call', async () => {
    const { store } = suite.runtime;
    const orphan = newId('ag');
    await handleCommand(deps(), agentNameStream('alice', 'orphan'), agentNameDecider, {
      type: 'ReserveAgentName',
      agentId: orphan,
      operator: 'alice',
      name: 'orphan',
    });
    expect(await readStream(store, agentStream(orphan))).toEqual([]);

    const ensured = await ensureAgent(deps(), { operator: 'alice', name: 'orphan' });
    expect(ensured).toEqual({ agentId: orphan, name: 'orphan', created: true });
    expect((await readStream(store, agentStream(orphan))).map((e) => e.type)).toEqual(['AgentRegistered']);
    expect(await readStream(store, agentNameStream('alice', 'orphan'))).toHaveLength(1);
  });
});
