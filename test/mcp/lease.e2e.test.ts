import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTodo } from '../../projections/todos.queries.ts';
import { fixedClock } from '../../src/clock.ts';
import { readStream } from '../http/api/client.ts';
import { connectAgent, eventually, push, settled, startServer, type TestServer, vend } from './support.ts';

type Claimed = { todo: { id: string; state: string } | null; lease_id: string; lease_expires_at: string };
const QUEUE = 'hookline://queues/inbox';

/** Time is the test's: the server runs on a clock the test moves; the expiry job runs on its own. */
describe('leases: expiry returns a todo to pending and rings; heartbeat keeps it', () => {
  const clock = fixedClock(new Date());
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ clock });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('an expired lease goes back to pending (TodoLeaseExpired at the expected revision), rings, and the old lease is refused', async () => {
    const ep = await vend(server);
    const agent = await connectAgent(ep);
    const watcher = await connectAgent(ep);
    try {
      await watcher.client.subscribeResource({ uri: QUEUE });
      const todo = await push(server, ep, { title: 'slow work' });
      await watcher.waitForRing(QUEUE, 1);
      await settled(server);

      const claimed = await agent.ok<Claimed>('claim', { todo_id: todo.id, lease_seconds: 60 });
      expect(claimed.todo?.state).toBe('claimed');
      await settled(server);
      clock.advance(61_000);

      const state = await eventually(async () => {
        const r = await agent.ok<{ todo: { state: string } }>('get_todo', { todo_id: todo.id });
        return r.todo.state === 'pending' ? r.todo.state : undefined;
      });
      expect(state).toBe('pending');
      await watcher.waitForRing(QUEUE, 2);
      expect((await readStream(server.runtime.store, `todo-${todo.id}`)).map((e) => e.type)).toEqual([
        'TodoCreated',
        'TodoClaimed',
        'TodoLeaseExpired',
      ]);
      expect(await agent.refused('complete', { todo_id: todo.id, lease_id: claimed.lease_id })).toBe(
        'lease_expired',
      );
      await settled(server);
      expect(await findTodo(server.runtime.db, todo.id)).toMatchObject({
        state: 'pending',
        lease_expires_at: null,
      });

      // Claimable again by anyone; a release rings too.
      const again = await watcher.ok<Claimed>('claim_next', {});
      expect(again.todo?.id).toBe(todo.id);
      await watcher.ok('release', { todo_id: todo.id, lease_id: again.lease_id });
      await watcher.waitForRing(QUEUE, 3);
    } finally {
      await agent.close();
      await watcher.close();
    }
  });

  it('a heartbeat moves the expiry: past the first expiry the holder can still complete', async () => {
    const ep = await vend(server);
    const agent = await connectAgent(ep);
    try {
      const todo = await push(server, ep, { title: 'long work' });
      await settled(server);
      const claimed = await agent.ok<Claimed>('claim', { todo_id: todo.id, lease_seconds: 60 });
      clock.advance(50_000);
      const beat = await agent.ok<{ lease_expires_at: string }>('heartbeat', {
        todo_id: todo.id,
        lease_id: claimed.lease_id,
        lease_seconds: 60,
      });
      expect(Date.parse(beat.lease_expires_at)).toBe(clock.now().getTime() + 60_000);
      await settled(server);
      clock.advance(30_000); // 80 s after the claim: the first lease would have run out at 60 s
      await settled(server);
      const done = await agent.ok<{ todo: { state: string } }>('complete', {
        todo_id: todo.id,
        lease_id: claimed.lease_id,
      });
      expect(done.todo.state).toBe('completed');
      expect((await readStream(server.runtime.store, `todo-${todo.id}`)).map((e) => e.type)).not.toContain(
        'TodoLeaseExpired',
      );

      // Without a heartbeat the same wait is fatal.
      const other = await push(server, ep, { title: 'forgotten' });
      await settled(server);
      const lapsed = await agent.ok<Claimed>('claim', { todo_id: other.id, lease_seconds: 60 });
      clock.advance(80_000);
      expect(await agent.refused('heartbeat', { todo_id: other.id, lease_id: lapsed.lease_id })).toBe(
        'lease_expired',
      );
    } finally {
      await agent.close();
    }
  });
});
