import {
  bufferWhen,
  concatMap,
  defer,
  filter,
  from,
  type Observable,
  Subject,
  Subscription,
  take,
  tap,
  timer,
} from 'rxjs';
import type { RecordedEvent } from '../../src/eventstore/port.ts';
import { FeedAheadError } from './feed.ts';

export type LiveOutcome = 'aborted' | 'overflow' | 'completed' | 'behind';

export interface LiveBatching {
  /** Live events are gathered this long before a batch is applied (the window when not busy). */
  readonly batchMs: number;
  /** A busy projection's window grows up to this (equal to `batchMs`: it never grows). */
  readonly batchMaxMs: number;
  /** A batch that applied at least this many events makes the projection busy. */
  readonly busyEvents: number;
  readonly batchSize: number;
  readonly maxBuffered: number;
}

export interface FollowLiveArgs {
  readonly source: Observable<RecordedEvent>;
  readonly signal: AbortSignal;
  readonly options: LiveBatching;
  /**
   * Applies one batch (retrying it until it commits) and resolves with how many of its events the
   * projection applied; rejects only on a moved checkpoint or an abort.
   */
  apply(batch: readonly RecordedEvent[]): Promise<number>;
  /** Whether a lazily kept checkpoint waits to be written (idle ticks are then passed to `tick`). */
  pendingCheckpoint(): boolean;
  tick(): Promise<void>;
}

const isAbort = (err: unknown) => err instanceof Error && err.name === 'AbortError';

/**
 * The window after a batch that applied `applied` events: doubled (up to `batchMaxMs`) while the
 * projection is busy, back to `batchMs` at once when it is not. Each batch is a transaction with a
 * cost of its own (BEGIN, the checkpoint's compare-and-set, the projection's statements, COMMIT),
 * so under a busy log fewer, larger batches cost less per event; when the log is quiet the short
 * window keeps read-your-writes and the live screens' settling fast.
 */
export function nextWindow(current: number, applied: number, o: LiveBatching): number {
  if (applied < o.busyEvents || o.batchMaxMs <= o.batchMs) return o.batchMs;
  return Math.min(Math.max(current, o.batchMs) * 2, o.batchMaxMs);
}

/**
 * A worker's live phase: events gathered for a window (`nextWindow`) and applied one batch at a
 * time (concatMap), at most `batchSize` events a transaction. A window also waits for the batch in
 * flight, so events that arrive while a slow batch commits are applied together after it instead
 * of as a queue of small batches. While events come, windows follow one another; once one has
 * closed with nothing in it and no lazily kept checkpoint waits, the next opens only with the next
 * event (for half of `batchMs`), so a quiet projection sets no timer at all (each of them ticked
 * every `batchMs` before: about 20 ms of CPU a second and 120 wake-ups for an idle server).
 * Resolves when aborted, when the source completes (the store closed), when the writer falls
 * `maxBuffered` events behind ('overflow': the caller catches up by reading, so memory stays
 * bounded), or when the shared feed is already past the writer ('behind'); rejects on any other
 * failure. The batch in flight always finishes first.
 */
export function followLive(args: FollowLiveArgs): Promise<LiveOutcome> {
  const { signal, options } = args;
  return new Promise((resolve, reject) => {
    const sub = new Subscription();
    let buffered = 0;
    let inflight: Promise<void> = Promise.resolve();
    let windowMs = options.batchMs;
    let settled = false;
    const settle = (outcome: LiveOutcome | { error: unknown }) => {
      if (settled) return;
      settled = true;
      sub.unsubscribe();
      signal.removeEventListener('abort', onAbort);
      inflight
        .catch(() => {})
        .then(() => {
          if (typeof outcome === 'object') reject(outcome.error);
          else resolve(outcome);
        });
    };
    const onAbort = () => settle('aborted');
    signal.addEventListener('abort', onAbort);

    /** Applies `batch` in transactions of at most `batchSize` events, then sets the next window. */
    const applyAll = async (batch: readonly RecordedEvent[]): Promise<void> => {
      let applied = 0;
      for (let start = 0; start < batch.length; start += options.batchSize) {
        const part = batch.slice(start, start + options.batchSize);
        try {
          applied += await args.apply(part);
        } finally {
          buffered -= part.length;
        }
      }
      windowMs = nextWindow(windowMs, applied, options);
    };

    /** Each event as it arrives, before it joins the buffer: what opens a window when idle. */
    const arrived = new Subject<void>();
    /** The last window closed empty: the next one waits for an event to start its time. */
    let idle = false;
    const windowOf = (ms: number) => timer(ms).pipe(concatMap(() => defer(() => inflight.catch(() => {}))));

    sub.add(
      args.source
        .pipe(
          tap(() => {
            if (++buffered > options.maxBuffered) settle('overflow');
            arrived.next();
          }),
          // The window starts when the previous batch is handed on, and closes once it has passed
          // and that batch has committed. When idle it starts with the next event and lasts half
          // the quiet window: an event on a quiet log waited for the rest of a running window
          // before, half of it on average, and now waits that long every time.
          bufferWhen(() =>
            idle && !args.pendingCheckpoint()
              ? arrived.pipe(
                  take(1),
                  concatMap(() => windowOf(options.batchMs / 2)),
                )
              : windowOf(windowMs),
          ),
          tap((batch) => {
            idle = batch.length === 0;
          }),
          // An empty buffer is an idle tick: the time to write a lazily kept checkpoint.
          filter((batch) => batch.length > 0 || args.pendingCheckpoint()),
          concatMap((batch) => {
            inflight = batch.length === 0 ? args.tick() : applyAll(batch);
            return from(inflight);
          }),
        )
        .subscribe({
          error: (error: unknown) =>
            settle(isAbort(error) ? 'aborted' : error instanceof FeedAheadError ? 'behind' : { error }),
          complete: () => settle('completed'),
        }),
    );
    if (signal.aborted) settle('aborted');
  });
}
