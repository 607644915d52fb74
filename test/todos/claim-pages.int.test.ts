import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createFollowUps } from '../../src/follow-up.ts';
import { createDeliveryRecorder } from '../../src/ingest/recorder.ts';
import { createDrain } from '../../src/todos/drain.ts';
import { pushTodo } from '../../src/todos/push.ts';
import { readStream } from '../http/api/client.ts';
import { useTestRuntime, vendTestEndpoint } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/**
 * claim_next reads its candidates from the todos read model a page at a time, the first page sized
 * from how far the latest claims had to walk (src/todos/drain.ts). The read model follows the
 * claims, so its oldest "pending" rows can all be todos already claimed: here a read model held
 * back by hand (the claimed rows set pending again) makes a drain that never saw those claims
 * walk past several pages of them to the todos still to be had.
 */
describe.runIf(hasPg)(
  'claim_next past pages of todos the read model still shows as pending (PostgreSQL)',
  () => {
    const suite = useTestRuntime('hookline_claim_pages');

    it('a drain that saw none of 170 claims walks past them and claims each of the other 30 once', async () => {
      const { store, clock, db } = suite.runtime;
      const ep = await vendTestEndpoint(suite.runtime, 'pages');
      const recorder = createDeliveryRecorder({ store, clock });
      const followUps = createFollowUps({ logger: suite.runtime.logger });
      const ids: string[] = [];
      for (let i = 0; i < 200; i++) {
        const pushed = await pushTodo(
          { store, clock, recorder, followUps },
          {
            ref: ep.slug,
            operator: 'alice',
            human: 'alice',
            title: `t${i}`,
            queue: undefined,
            kind: 'k',
            payload: null,
            key: null,
            sourceIp: null,
            headers: {},
          },
        );
        ids.push(pushed.id);
      }
      await suite.runtime.projections.waitFor(await store.committedPosition(), { timeoutMs: 60_000 });

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
      await suite.runtime.projections.waitFor(await store.committedPosition(), { timeoutMs: 60_000 });
      // The read model behind the claims, as it is for tens of milliseconds after each.
      const stale = await sql`update todos set state = 'pending', claimed_by = null, lease_expires_at = null
      where id = any(${claimedFirst}::text[]) and state = 'claimed'`.execute(db);
      expect(stale.numAffectedRows).toBe(170n);

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
