import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTodo } from '../../projections/todos.queries.ts';
import { deliveryDetail } from '../../src/deliveries/read.ts';
import { connectAgent, startServer, type TestServer, vend } from './support.ts';

/**
 * A NUL character is valid JSON (`\u0000`) and a valid form value (`%00`), but PostgreSQL refuses it
 * in jsonb and in text. A delivery carrying one must not stall the read models: the todo appears,
 * its payload reads back intact, and later deliveries keep flowing.
 */
describe('a delivery whose payload holds a NUL character', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  // Shorter than the helper's 60 s: a stalled projection fails the test instead of the suite timeout.
  const caughtUp = async () => {
    const head = await server.runtime.store.committedPosition();
    await server.runtime.projections.waitFor(head, { timeoutMs: 15_000 });
  };

  it('JSON and form bodies: the todos and log read models catch up and the payload round-trips', async () => {
    const ep = await vend(server);
    const agent = await connectAgent(ep);
    try {
      const hook = await agent.ok<{ ingest_url: string }>('create_webhook', {
        name: 'hostile',
        require_signature: false,
      });
      const json =
        '{"type":"evil\\u0000type","data":{"note":"a\\u0000b","k\\u0000":["\\u0000"],"lit":"\\\\u0000"}}';
      const sent = [
        { body: json, type: 'application/json', payload: JSON.parse(json) as unknown },
        {
          body: 'note=a%00b&x=1',
          type: 'application/x-www-form-urlencoded',
          payload: { note: 'a\u0000b', x: '1' },
        },
      ];
      const acks: number[] = [];
      for (const s of sent) {
        const res = await fetch(hook.ingest_url, {
          method: 'POST',
          headers: { 'content-type': s.type },
          body: s.body,
        });
        expect(res.status).toBe(202);
        acks.push(((await res.json()) as { id: number }).id);
      }
      await caughtUp();

      const { db } = server.runtime;
      for (const [i, s] of sent.entries()) {
        const row = await db
          .selectFrom('todos')
          .select('id')
          .where('event_id', '=', BigInt(acks[i]!))
          .executeTakeFirstOrThrow();
        // The read model (what the console's todo page shows) and the stream (get_todo) agree.
        expect((await findTodo(db, row.id))?.payload).toEqual(s.payload);
        const got = await agent.ok<{ todo: { untrusted: { payload: unknown } } }>('get_todo', {
          todo_id: row.id,
        });
        expect(got.todo.untrusted.payload).toEqual(s.payload);
        // The log keeps the exact bytes (in the delivery's event; the read model keeps the summary).
        const logged = await deliveryDetail(server.runtime, acks[i]!);
        if (!logged) throw new Error(`delivery ${acks[i]} is not in the log`);
        expect(new TextDecoder().decode(logged.payload_bytes)).toBe(s.body);
        // A label in a text column: the NUL shows as U+FFFD.
        expect(logged.event_type).toBe(i === 0 ? 'evil\uFFFDtype' : null);
      }
      const listed = await agent.ok<{ todos: { id: string }[] }>('list_todos', {});
      expect(listed.todos.length).toBeGreaterThanOrEqual(2);

      // Nothing is stuck behind them: a plain delivery still becomes a todo.
      const res = await fetch(hook.ingest_url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"type":"plain"}',
      });
      expect(res.status).toBe(202);
      const plain = ((await res.json()) as { id: number }).id;
      await caughtUp();
      const after = await db.selectFrom('todos').select('id').where('event_id', '=', BigInt(plain)).execute();
      expect(after).toHaveLength(1);
    } finally {
      await agent.close();
    }
  });
});
