import { expiredLeases } from '../../projections/todos.queries.ts';
import type { Clock } from '../clock.ts';
import type { DB } from '../db/database.ts';
import type { Logger } from '../logger.ts';
import type { Drain } from './drain.ts';

export const DEFAULT_EXPIRY_INTERVAL_MS = 1000;

/**
 * Returns todos whose lease ran out to pending (docs/reference/mcp-tools.md, "Todo lifecycle"). Every interval it reads
 * the claimed todos past their expiry from the read model and appends `TodoLeaseExpired` at the
 * revision it read, only if the lease it saw is still the one and still expired (a heartbeat or
 * a finish in between wins). Every instance may run it: the expected revision lets one win.
 */
export function startLeaseExpiry(deps: {
  readonly db: DB;
  readonly clock: Clock;
  readonly drain: Pick<Drain, 'expire'>;
  readonly logger: Logger;
  readonly intervalMs?: number;
}): { stop(): Promise<void>; runOnce(): Promise<number> } {
  let running: Promise<number> | undefined;
  let stopped = false;

  const runOnce = (): Promise<number> => {
    running ??= (async () => {
      let expired = 0;
      try {
        const due = await expiredLeases(deps.db, deps.clock.now(), 200);
        for (const { id, leaseId } of due) {
          if (stopped) break;
          if (await deps.drain.expire(id, leaseId)) expired++;
        }
      } catch (err) {
        if (!stopped) deps.logger.warn({ err }, 'lease expiry: cycle failed; retrying next interval');
      }
      return expired;
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  const timer = setInterval(() => void runOnce(), deps.intervalMs ?? DEFAULT_EXPIRY_INTERVAL_MS);
  timer.unref();
  return {
    runOnce,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
