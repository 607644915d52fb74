import { Observable } from 'rxjs';
import { type RecordedEvent, START, type SubscribeAllOptions } from '../port.ts';
import { parsePosition, type SqlPosition } from './positions.ts';
import { type AnyDb, defaultPage, type PageLimits, readAllPage } from './reads.ts';
import { rowSize, toRecordedEvent } from './rows.ts';
import { sleep, type Wakeup } from './wakeup.ts';

export interface SubscriptionDeps {
  readonly db: AnyDb;
  readonly wakeup: Wakeup;
  /** Poll interval while live: a late commit can become visible without a wake-up. */
  readonly pollMs: number;
  /** Aborted when the store closes: every subscription completes. */
  readonly closed: AbortSignal;
  /** The store waits for running loops when it closes. */
  readonly track: (loop: Promise<void>) => void;
  readonly onError: (err: unknown) => void;
  readonly page?: PageLimits;
}

/**
 * `$all` after a position: pages until caught up, then waits for a wake-up (a commit of this
 * process, a NOTIFY) or the poll interval and reads again. Every read starts strictly after the
 * last event handed on, so nothing repeats; visibility below the oldest running transaction means
 * nothing is skipped. A failed query (lost connection, restarted database) is retried with backoff
 * from the same position.
 */
export function subscribeAllSql(
  deps: SubscriptionDeps,
  options: SubscribeAllOptions = {},
): Observable<RecordedEvent> {
  const limits = deps.page ?? defaultPage;
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

    const loop = async () => {
      let backoff = 100;
      while (!signal.aborted) {
        const seq = deps.wakeup.seq;
        let rows: Awaited<ReturnType<typeof readAllPage>>;
        try {
          rows = await readAllPage(deps.db, after, limits);
          backoff = 100;
        } catch (err) {
          if (signal.aborted) break;
          deps.onError(err);
          await sleep(backoff, signal);
          backoff = Math.min(backoff * 2, 5000);
          continue;
        }
        let bytes = 0;
        for (const row of rows) {
          if (signal.aborted) break;
          const event = toRecordedEvent(row);
          after = { transactionId: BigInt(row.tx), globalPosition: BigInt(row.gp) };
          bytes += rowSize(row);
          if (!options.filter || options.filter(event)) subscriber.next(event);
        }
        // A page cut short by its row or byte bound means more is waiting; otherwise we are live.
        const full = rows.length >= limits.maxRows || bytes >= limits.maxBytes;
        if (!full) await deps.wakeup.wait(seq, deps.pollMs, signal);
      }
      if (deps.closed.aborted) subscriber.complete();
    };

    deps.track(loop().catch((err) => subscriber.error(err)));
    return () => unsubscribed.abort();
  });
}
