import { Observable } from 'rxjs';
import { type RecordedEvent, START, type SubscribeAllOptions } from '../port.ts';
import { compareSqlPositions, parsePosition, type SqlPosition } from './positions.ts';
import { type AnyDb, isFullPage, type PageLimits, readAllPage } from './reads.ts';
import { type EventRow, toRecordedEvent } from './rows.ts';
import type { LiveTail } from './tail.ts';
import { sleep } from './wakeup.ts';

export interface SubscriptionDeps {
  readonly db: AnyDb;
  readonly tail: LiveTail;
  readonly limits: PageLimits;
  /** Aborted when the store closes: every subscription completes. */
  readonly closed: AbortSignal;
  /** The store waits for running loops when it closes. */
  readonly track: (loop: Promise<void>) => void;
  readonly onError: (err: unknown) => void;
}

const positionOf = (row: EventRow): SqlPosition => ({
  transactionId: BigInt(row.tx),
  globalPosition: BigInt(row.gp),
});

/**
 * `$all` after a position. The subscription catches up with its own queries, then joins the
 * store's live tail (tail.ts). It hands on only events after the last one it handed on, so nothing
 * repeats, and whenever a page from the tail starts after its own position it reads the gap itself
 * before taking that page, so nothing is skipped; visibility below the oldest running transaction
 * that writes events (reads.ts, the live bound, as the tail reads) means no event can later appear
 * behind a position already passed. Failed queries (lost connection, restarted database) are
 * retried with backoff from the same position.
 */
export function subscribeAllSql(
  deps: SubscriptionDeps,
  options: SubscribeAllOptions = {},
): Observable<RecordedEvent> {
  return new Observable<RecordedEvent>((subscriber) => {
    let after: SqlPosition;
    try {
      after = parsePosition(options.after ?? START);
    } catch (err) {
      subscriber.error(err);
      return;
    }
    const unsubscribed = new AbortController();
    const signal = AbortSignal.any([unsubscribed.signal, deps.closed]);

    const deliver = (row: EventRow) => {
      if (signal.aborted) return;
      const position = positionOf(row);
      if (compareSqlPositions(position, after) <= 0) return;
      after = position;
      const event = toRecordedEvent(row);
      let wanted = true;
      try {
        wanted = !options.filter || options.filter(event);
      } catch (err) {
        // The caller's filter failed: this subscription ends with it, the shared tail goes on.
        subscriber.error(err);
        unsubscribed.abort();
        return;
      }
      if (wanted) subscriber.next(event);
    };

    /** Reads pages after `after` until one is not full. False when aborted first. */
    const catchUp = async (): Promise<boolean> => {
      let backoff = 100;
      while (!signal.aborted) {
        let rows: EventRow[];
        try {
          rows = await readAllPage(deps.db, after, deps.limits);
          backoff = 100;
        } catch (err) {
          if (signal.aborted) return false;
          deps.onError(err);
          await sleep(backoff, signal);
          backoff = Math.min(backoff * 2, 5000);
          continue;
        }
        for (const row of rows) deliver(row);
        if (!isFullPage(rows, deps.limits)) return true;
      }
      return false;
    };

    // Pages from the tail wait here while this subscription reads a gap itself.
    const pending: Array<{ from: SqlPosition; rows: readonly EventRow[] }> = [];
    let direct = false;
    let gap: (() => void) | undefined;

    const loop = async () => {
      if (!(await catchUp())) return;
      const detach = deps.tail.attach((from, rows) => {
        if (direct && compareSqlPositions(from, after) <= 0) {
          for (const row of rows) deliver(row);
          return;
        }
        direct = false;
        pending.push({ from, rows });
        gap?.();
      });
      try {
        while (!signal.aborted) {
          if (direct) {
            await new Promise<void>((resolve) => {
              const done = () => {
                gap = undefined;
                signal.removeEventListener('abort', done);
                resolve();
              };
              gap = done;
              signal.addEventListener('abort', done, { once: true });
            });
            continue;
          }
          if (!(await catchUp())) break;
          while (pending.length > 0 && compareSqlPositions(pending[0]!.from, after) <= 0) {
            for (const row of pending.shift()!.rows) deliver(row);
          }
          // A page still starting beyond us was read after our catch-up began: catch up again.
          if (pending.length === 0) direct = true;
        }
      } finally {
        detach();
      }
    };

    deps.track(
      loop().then(
        () => {
          if (deps.closed.aborted) subscriber.complete();
        },
        (err) => subscriber.error(err),
      ),
    );
    return () => unsubscribed.abort();
  });
}
