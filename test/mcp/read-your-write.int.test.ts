import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';
import { holdTable } from '../support/table-lock.ts';
import { connectAgent, push, settled, startServer, type TestServer, vend } from './support.ts';

const hasPg = await postgresAvailable();

describe.runIf(hasPg)('an MCP session reads its own writes (issue 15)', () => {
  let db: TestDatabase;
  let server: TestServer;
  beforeAll(async () => {
    db = await createTestDatabase();
    server = await startServer({ databaseUrl: db.url });
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
  });

  it('list_todos and the queue resource after a claim show the claim, though the read model lagged', async () => {
    const ep = await vend(server);
    const todo = await push(server, ep, { title: 'read me after the claim' });
    await settled(server);
    const agent = await connectAgent({ url: ep.url, token: ep.token });
    const lock = await holdTable(db.url, 'todos');
    try {
      await agent.ok('claim', { todo_id: todo.id });
      // The todos read model cannot apply the claim until the lock goes; the read waits for it.
      const listed = agent.ok<{ todos: { id: string; state: string }[] }>('list_todos', {});
      setTimeout(() => void lock.release(), 300);
      const { todos } = await listed;
      expect(todos.find((t) => t.id === todo.id)?.state).toBe('claimed');
      const queue = await agent.client.readResource({ uri: 'hookline://queues/inbox' });
      const [content] = queue.contents;
      expect(JSON.parse(content && 'text' in content ? content.text : '')).toMatchObject({
        pending: 0,
        claimed: 1,
      });
    } finally {
      await lock.release();
      await agent.close();
    }
  });
});
