import { describe, expect, it } from 'vitest';
import { createDrain } from '../../src/todos/drain.ts';
import { readStream } from '../http/api/client.ts';
import { pushTestTodos, useTestRuntime, vendTestEndpoint } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/**
 * Two drains stand for two processes (each with its own memory of what it saw claimed), their
 * callers racing claim_next over the same todos: only the expected revision keeps them apart.
 */
describe.runIf(hasPg)('claim_next across processes: the expected revision decides (PostgreSQL)', () => {
  const suite = useTestRuntime('hookline_claim_race');

  it('6 callers in each of 2 drains over 60 todos: every todo claimed exactly once', async () => {
    const { store, clock, db } = suite.runtime;
    const ep = await vendTestEndpoint(suite.runtime, 'racer');
    const ids = await pushTestTodos(suite.runtime, ep.slug, 60);
    await suite.runtime.projections.waitFor(await store.committedPosition(), { timeoutMs: 60_000 });

    const caller = { endpointId: ep.endpointId, queues: ['inbox'] };
    const drains = [createDrain({ store, clock, db }), createDrain({ store, clock, db })];
    const won = await Promise.all(
      drains.flatMap((drain) =>
        Array.from({ length: 6 }, async () => {
          const mine: string[] = [];
          for (;;) {
            const moved = await drain.claimNext(caller, {
              queues: ['inbox'],
              sessionId: null,
              leaseMs: 60_000,
            });
            if (!moved) return mine;
            mine.push(moved.todo.id);
          }
        }),
      ),
    );
    const all = won.flat();
    expect(all).toHaveLength(60);
    expect(new Set(all)).toEqual(new Set(ids));
    for (const id of ids) {
      const claims = (await readStream(store, `todo-${id}`)).filter((e) => e.type === 'TodoClaimed');
      expect(claims, id).toHaveLength(1);
    }
  });
});
