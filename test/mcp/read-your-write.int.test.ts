import pg from 'pg';
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

  it('list_todos after a claim that an older open transaction hides from the log readers shows the claim', async () => {
    // A transaction that began before the claim (a projection's, another batch's) hides the claim
    // from every reader of the log until it ends; the log's visible head stops before the claim,
    // so a wait for it returned at once and the read showed the todo still pending.
    const ep = await vend(server);
    const todo = await push(server, ep, { title: 'claimed behind an open transaction' });
    await settled(server);
    const agent = await connectAgent({ url: ep.url, token: ep.token });
    const older = new pg.Client({ connectionString: db.url });
    await older.connect();
    let open = true;
    const end = async () => {
      if (!open) return;
      open = false;
      await older.query('commit');
    };
    try {
      await older.query('begin');
      await older.query('select pg_current_xact_id()');
      await agent.ok('claim', { todo_id: todo.id });
      const listed = agent.ok<{ todos: { id: string; state: string }[] }>('list_todos', {});
      setTimeout(() => void end(), 300);
      const { todos } = await listed;
      expect(todos.find((t) => t.id === todo.id)?.state).toBe('claimed');
    } finally {
      await end();
      await older.end();
      await agent.close();
    }
  });
});
