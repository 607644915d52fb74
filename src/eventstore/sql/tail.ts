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

export function createLiveTail(deps: TailDeps): LiveTail {
  const sinks = new Set<TailSink>();
  let running = false;

  async function run(): Promise<void> {
    running = true;
    let position: SqlPosition | undefined;
    let backoff = 100;
    let lastQuery = 0;
    /** Commits (fire, not nudge) counted when the previous query began. */
    let commitsSeen = deps.wakeup.commits;
    /** How long the events of a commit that woke us have stayed invisible, in ms of re-reads. */
    let hiddenFor = 0;
    try {
      while (sinks.size > 0 && !deps.closed.aborted) {
        const seq = deps.wakeup.seq;
        // A commit since the previous query began, whatever the reader was doing when it came.
        const woken = deps.wakeup.commits !== commitsSeen;
        commitsSeen = deps.wakeup.commits;
        lastQuery = performance.now();
        let rows: EventRow[];
        let from: SqlPosition;
        try {
          // Starting from the real head keeps a subscription's position (untrusted, e.g. a
          // Last-Event-ID far in the future) from steering the reader everyone shares.
          position ??= parsePosition(await readHeadPosition(deps.db));
          from = position;
          // Below the oldest running transaction that writes events, not the oldest of the cluster.
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
        // A commit woke us but its events are not visible yet: a writer's transaction that got its
        // id before it (another batch, of this process or another) is still open, and may end
        // without a wake-up of its own. So look again soon instead of waiting for the next commit or the poll. We know it
        // for this process's own commits (their positions); for another process's, a wake-up
        // that found nothing at all says as much.
        const own = deps.wakeup.committed;
        const behindOwn =
          own !== undefined && position !== undefined && compareSqlPositions(position, own) < 0;
        // Until the poll would have found it. (A nudge, the listener's reconnect, is no commit:
        // the read after it looks once, for what a lost connection may have missed.)
        const looking = behindOwn || (rows.length === 0 && (woken || hiddenFor > 0));
        if (looking && hiddenFor < deps.pollMs) {
          const wait = Math.min(Math.max(2, hiddenFor), 50);
          hiddenFor += wait;
          // A commit from now on (often the very transaction that hid ours) cuts the wait short,
          // but no closer to the last read than the live interval: on a busy log commits come
          // every few ms, and the reader must not read at their rate.
          const before = deps.wakeup.seq;
          await deps.wakeup.wait(before, wait, deps.closed);
          if (deps.wakeup.seq !== before) {
            const early = lastQuery + deps.minIntervalMs - performance.now();
            if (early > 0) await sleep(early, deps.closed);
          }
          continue;
        }
        hiddenFor = 0;
        await deps.wakeup.wait(seq, deps.pollMs, deps.closed);
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
