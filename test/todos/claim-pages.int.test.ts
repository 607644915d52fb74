import { describe, expect, it } from 'vitest';
import { createDrain } from '../../src/todos/drain.ts';
import { readStream } from '../http/api/client.ts';
import { pushTestTodos, useTestRuntime, vendTestEndpoint } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/**
 * claim_next reads its candidates from the todos read model a page at a time, the first page sized
 * from how far the latest claims had to walk (src/todos/drain.ts). The read model follows the
 * claims, so its oldest "pending" rows can all be todos already claimed: here the read model is
 * held where it was before any claim (its workers stopped), and a drain that never saw the claims
 * of another walks past several pages of them to the todos still to be had.
 */
describe.runIf(hasPg)(
  'claim_next past pages of todos the read model still shows as pending (PostgreSQL)',
  () => {
    const suite = useTestRuntime('hookline_claim_pages');

    it('a drain that saw none of 170 claims walks past them and claims each of the other 30 once', async () => {
      const { store, clock, db } = suite.runtime;
      const ep = await vendTestEndpoint(suite.runtime, 'pages');
      const ids = await pushTestTodos(suite.runtime, ep.slug, 200);
      await suite.runtime.projections.waitFor(await store.committedPosition(), { timeoutMs: 60_000 });
      await suite.runtime.projections.stop(); // the read model shows all 200 pending from here on

      const caller = { endpointId: ep.endpointId, queues: ['inbox'] };
      const command = { queues: ['inbox'], sessionId: null, leaseMs: 60_000 };
      const first = createDrain({ store, clock, db });
      const claimedFirst: string[] = [];
      for (let i = 0; i < 170; i++) {
        const moved = await first.claimNext(caller, command);
        expect(moved, `claim ${i}`).toBeDefined();
        claimedFirst.push(moved!.todo.id);
      }
      // The oldest first: the 170 claimed are the 170 pushed first.
      expect(claimedFirst).toEqual(ids.slice(0, 170));

      const second = createDrain({ store, clock, db });
      const claimedSecond: string[] = [];
      for (;;) {
        const moved = await second.claimNext(caller, command);
        if (!moved) break;
        claimedSecond.push(moved.todo.id);
      }
      expect(claimedSecond).toEqual(ids.slice(170));
      for (const id of ids) {
        const claims = (await readStream(store, `todo-${id}`)).filter((e) => e.type === 'TodoClaimed');
        expect(claims, id).toHaveLength(1);
      }
    }, 120_000);
  },
);
