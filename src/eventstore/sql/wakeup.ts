import { Subject } from 'rxjs';
import type { Position } from '../port.ts';
import { compareSqlPositions, parsePosition, type SqlPosition } from './positions.ts';

/**
 * Wakes `$all` readers: fired after each commit of this process, and on PostgreSQL by NOTIFY from
 * other processes. A wake-up only triggers the query; readers also poll, because a transaction
 * that commits late can make events visible without a fresh notification.
 */
export interface Wakeup {
  /** Grows with each wake-up; read it before querying and pass it to wait(). */
  readonly seq: number;
  /** The newest position this process has committed (its own appends), if any, parsed once. */
  readonly committed: SqlPosition | undefined;
  /** Grows with each commit (fire), not with a nudge: a wake-up that stands for a commit. */
  readonly commits: number;
  /** A commit happened: of this process (with its newest position) or, notified, of another. */
  fire(position?: Position): void;
  /** Read again, though no commit is known (the listener has just (re)connected and may have missed some). */
  nudge(): void;
  /** Resolves at the first wake-up after `since` (at once if there was one), after `ms`, or on abort. */
  wait(since: number, ms: number, signal: AbortSignal): Promise<void>;
  complete(): void;
}

export function createWakeup(): Wakeup {
  let seq = 0;
  let commits = 0;
  let committed: SqlPosition | undefined;
  const ticks = new Subject<number>();
  return {
    get seq() {
      return seq;
    },
    get committed() {
      return committed;
    },
    get commits() {
      return commits;
    },
    fire(position) {
      // Batches in flight on two connections may commit out of position order: keep the newest.
      if (position !== undefined) {
        const p = parsePosition(position);
        if (committed === undefined || compareSqlPositions(p, committed) > 0) committed = p;
      }
      commits++;
      seq++;
      ticks.next(seq);
    },
    nudge() {
      seq++;
      ticks.next(seq);
    },
    wait(since, ms, signal) {
      if (seq !== since || signal.aborted) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const sub = ticks.subscribe({ next: () => done(), complete: () => done() });
        const timer = setTimeout(done, ms);
        signal.addEventListener('abort', done, { once: true });
        function done() {
          sub.unsubscribe();
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        }
      });
    },
    complete() {
      ticks.complete();
    },
  };
}

/** A sleep that an abort cuts short. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
