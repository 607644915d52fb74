import { compareSqlPositions, parsePosition, type SqlPosition } from './positions.ts';
import { type AnyDb, isFullPage, type PageLimits, readAllPage, readHeadPosition } from './reads.ts';
import type { EventRow } from './rows.ts';
import { sleep, type Wakeup } from './wakeup.ts';

/**
 * One reader of the live end of `$all`, shared by every subscription that has caught up. Without
 * it each live subscription queries after every commit, and with a few projections following the
 * log those reads outweighed the appends (measured: 8 live subscribers cut append throughput by
 * two thirds). It runs while at least one subscription is attached, from the visible head at the
 * time it starts, and hands each page to every attached subscription in order, with the position
 * it was read after; a subscription drops what it has already seen and reads any gap between its
 * own position and a page's itself (see subscription.ts).
 */
export type TailSink = (after: SqlPosition, rows: readonly EventRow[]) => void;

export interface LiveTail {
  /** The sink receives every page the tail reads from now on, in order. Returns the detach function. */
  attach(sink: TailSink): () => void;
}

export interface TailDeps {
  readonly db: AnyDb;
  readonly wakeup: Wakeup;
  readonly pollMs: number;
  /** At most one live query per this interval, however often commits wake the tail. */
  readonly minIntervalMs: number;
  readonly limits: PageLimits;
  readonly closed: AbortSignal;
  readonly track: (loop: Promise<void>) => void;
  readonly onError: (err: unknown) => void;
}

/** How long a wake-up that found nothing keeps the reader looking (see run()); then the poll. */
const NOTIFIED_HIDDEN_MS = 1000;

export function createLiveTail(deps: TailDeps): LiveTail {
  const sinks = new Set<TailSink>();
  let running = false;

  async function run(): Promise<void> {
    running = true;
    let position: SqlPosition | undefined;
    let backoff = 100;
    let lastQuery = 0;
    /** The query about to run follows a wake-up (a commit), not the poll. */
    let woken = false;
    /** How long the events of a commit that woke us have stayed invisible, in ms of re-reads. */
    let hiddenFor = 0;
    try {
      while (sinks.size > 0 && !deps.closed.aborted) {
        const seq = deps.wakeup.seq;
        lastQuery = performance.now();
        let rows: EventRow[];
        let from: SqlPosition;
        try {
          // Starting from the real head keeps a subscription's position (untrusted, e.g. a
          // Last-Event-ID far in the future) from steering the reader everyone shares.
          position ??= parsePosition(await readHeadPosition(deps.db));
          from = position;
          rows = await readAllPage(deps.db, from, deps.limits);
          backoff = 100;
        } catch (err) {
          if (deps.closed.aborted) break;
          deps.onError(err);
          await sleep(backoff, deps.closed);
          backoff = Math.min(backoff * 2, 5000);
          continue;
        }
        const last = rows.at(-1);
        if (last) {
          position = { transactionId: BigInt(last.tx), globalPosition: BigInt(last.gp) };
          for (const sink of [...sinks]) {
            try {
              sink(from, rows);
            } catch (err) {
              deps.onError(err); // one subscription's failure must not stop the others
            }
          }
        }
        if (isFullPage(rows, deps.limits)) continue;
        // A commit woke us but its events are not visible yet: a transaction that began before it
        // (another batch, a projection's) is still open, and may end without a wake-up of its
        // own. So look again soon instead of waiting for the next commit or the poll. We know it
        // for this process's own commits (their positions); for another process's, a wake-up
        // that found nothing at all says as much.
        const own = deps.wakeup.committed;
        const behindOwn =
          own !== undefined && position !== undefined && compareSqlPositions(position, own) < 0;
        // Behind our own commit, there is something to read: until the poll would have found it.
        // After a wake-up that found nothing (another process's commit, hidden; or the listener's
        // reconnect, which finds nothing at all) only for a while: the poll is the fallback.
        const hiddenBound = behindOwn ? deps.pollMs : Math.min(deps.pollMs, NOTIFIED_HIDDEN_MS);
        if ((behindOwn || (rows.length === 0 && woken)) && hiddenFor < hiddenBound) {
          const wait = Math.min(Math.max(2, hiddenFor), 50);
          hiddenFor += wait;
          // A commit from now on (often the very transaction that hid ours) cuts the wait short.
          await deps.wakeup.wait(deps.wakeup.seq, wait, deps.closed);
          continue;
        }
        hiddenFor = 0;
        await deps.wakeup.wait(seq, deps.pollMs, deps.closed);
        woken = deps.wakeup.seq !== seq;
        const early = lastQuery + deps.minIntervalMs - performance.now();
        if (early > 0) await sleep(early, deps.closed);
      }
    } finally {
      running = false;
    }
  }

  return {
    attach(sink) {
      sinks.add(sink);
      if (!running) deps.track(run());
      return () => {
        sinks.delete(sink);
      };
    },
  };
}
