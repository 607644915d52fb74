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
 *
 * A subscription also hears where the reader stands when that is not where a page says: when it
 * attaches to a running reader, and when the reader starts. Its catch-up and the reader's reads are
 * different reads, and an append that committed between them lies behind the reader and ahead of
 * the subscription; told only by pages, it would learn of that gap at the next append, however long
 * that takes (a lone doorbell on a quiet server). So it is handed an empty page from that position.
 */
export type TailSink = (after: SqlPosition, rows: readonly EventRow[]) => void;

export interface LiveTail {
  /**
   * The sink receives every page the tail reads from now on, in order, and an empty page from
   * where the tail stands when it attaches and when the tail starts. Returns the detach function.
   */
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
  /** Where the reader stands while it runs: after the last row it read, or the head it started at. */
  let position: SqlPosition | undefined;

  const hand = (sink: TailSink, from: SqlPosition, rows: readonly EventRow[]) => {
    try {
      sink(from, rows);
    } catch (err) {
      deps.onError(err); // one subscription's failure must not stop the others
    }
  };

  async function run(): Promise<void> {
    running = true;
    position = undefined;
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
          if (position === undefined) {
            position = parsePosition(await readHeadPosition(deps.db));
            const start = position;
            for (const sink of [...sinks]) hand(sink, start, []);
          }
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
          for (const sink of [...sinks]) hand(sink, from, rows);
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
      position = undefined;
    }
  }

  return {
    attach(sink) {
      sinks.add(sink);
      if (position !== undefined) hand(sink, position, []);
      if (!running) deps.track(run());
      return () => {
        sinks.delete(sink);
      };
    },
  };
}
