import { bufferTime, concatMap, filter, from, type Observable, Subscription, tap } from 'rxjs';
import type { RecordedEvent } from '../../src/eventstore/port.ts';
import { FeedAheadError } from './feed.ts';

export type LiveOutcome = 'aborted' | 'overflow' | 'completed' | 'behind';

export interface FollowLiveArgs {
  readonly source: Observable<RecordedEvent>;
  readonly signal: AbortSignal;
  readonly options: { readonly batchMs: number; readonly batchSize: number; readonly maxBuffered: number };
  /** Applies one batch (retrying it until it commits); rejects only on a moved checkpoint or an abort. */
  apply(batch: readonly RecordedEvent[]): Promise<void>;
  /** Whether a lazily kept checkpoint waits to be written (idle ticks are then passed to `tick`). */
  pendingCheckpoint(): boolean;
  tick(): Promise<void>;
}

const isAbort = (err: unknown) => err instanceof Error && err.name === 'AbortError';

/**
 * A worker's live phase: events in batches of up to `batchSize` or every `batchMs` (RxJS
 * bufferTime), applied one batch at a time (concatMap). Resolves when aborted, when the source
 * completes (the store closed), when the writer falls `maxBuffered` events behind ('overflow': the
 * caller catches up by reading, so memory stays bounded), or when the shared feed is already past
 * the writer ('behind'); rejects on any other failure. The batch in flight always finishes first.
 */
export function followLive(args: FollowLiveArgs): Promise<LiveOutcome> {
  const { signal, options } = args;
  return new Promise((resolve, reject) => {
    const sub = new Subscription();
    let buffered = 0;
    let inflight: Promise<void> = Promise.resolve();
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
    sub.add(
      args.source
        .pipe(
          tap(() => {
            if (++buffered > options.maxBuffered) settle('overflow');
          }),
          bufferTime(options.batchMs, null, options.batchSize),
          // An empty buffer is an idle tick: the time to write a lazily kept checkpoint.
          filter((batch) => batch.length > 0 || args.pendingCheckpoint()),
          concatMap((batch) => {
            inflight =
              batch.length === 0
                ? args.tick()
                : args.apply(batch).finally(() => {
                    buffered -= batch.length;
                  });
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
