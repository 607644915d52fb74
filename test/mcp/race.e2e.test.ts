import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStream } from '../http/api/client.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';
import { type Agent, connectAgent, push, settled, startServer, type TestServer, vend } from './support.ts';

const hasPg = await postgresAvailable();

describe.runIf(hasPg)('claim_next under contention (PostgreSQL)', () => {
  let database: TestDatabase;
  let server: TestServer;
  beforeAll(async () => {
    database = await createTestDatabase('hookline_mcp_race');
    server = await startServer({ databaseUrl: database.url });
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
  });

  it('10 agents racing claim_next over 100 todos: each todo is claimed exactly once', async () => {
    const ep = await vend(server);
    const pushed: string[] = [];
    for (let i = 0; i < 100; i++)
      pushed.push((await push(server, ep, { title: `job ${i}`, payload: { i } })).id);
    await settled(server);

    const agents: Agent[] = [];
    for (let i = 0; i < 10; i++) agents.push(await connectAgent(ep));
    type Claimed = { todo: { id: string } | null; lease_id: string | null };
    const claims = await Promise.all(
      agents.map(async (agent) => {
        const mine: string[] = [];
        for (;;) {
          const next = await agent.ok<Claimed>('claim_next', {});
          if (!next.todo) return mine;
          mine.push(next.todo.id);
          await agent.ok('complete', { todo_id: next.todo.id, lease_id: next.lease_id });
        }
      }),
    );
    await Promise.all(agents.map((a) => a.close()));

    const all = claims.flat();
    expect(all).toHaveLength(100);
    expect(new Set(all)).toEqual(new Set(pushed));
    // More than one agent got work (the race was real), and the log agrees: one claim per todo.
    expect(claims.filter((c) => c.length > 0).length).toBeGreaterThan(1);
    for (const id of pushed) {
      const types = (await readStream(server.runtime.store, `todo-${id}`)).map((e) => e.type);
      expect(types, id).toEqual(['TodoCreated', 'TodoClaimed', 'TodoCompleted']);
    }
    await settled(server);
    const states = await server.runtime.db
      .selectFrom('todos')
      .select(['state'])
      .where('endpoint_id', '=', ep.id)
      .execute();
    expect(states.map((s) => s.state)).toEqual(Array(100).fill('completed'));
  });
});
