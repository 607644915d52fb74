import { Observable, Subject, type Subscription, skipWhile } from 'rxjs';
import type { EventStore, Position, RecordedEvent } from '../../src/eventstore/port.ts';

/** The feed has already passed the position asked for: read up to it first, then follow again. */
export class FeedAheadError extends Error {
  constructor() {
    super('the shared feed is past this position');
    this.name = 'FeedAheadError';
  }
}

export interface LiveFeed {
  /**
   * Live events strictly after `after`, from the runner's one `$all` subscription. Errors with
   * FeedAheadError when the feed has already handed on events after `after` (they are not kept).
   */
  follow(after: Position): Observable<RecordedEvent>;
}

/**
 * One `$all` subscription shared by the runner's live workers: every subscription is a query
 * after each commit, so eight projections following separately would read eight times what one
 * reader needs. Started by the first follower at its position and
 * stopped when the last one leaves (a standby process reads nothing). A follower at or ahead of
 * the feed's last event joins it and skips what it has already applied; one behind it is told to
 * read (FeedAheadError), since the feed keeps no history.
 */
export function createLiveFeed(store: EventStore, order: (a: Position, b: Position) => number): LiveFeed {
  let subject: Subject<RecordedEvent> | undefined;
  let upstream: Subscription | undefined;
  let last: Position = 'start';
  let followers = 0;

  const stop = () => {
    upstream?.unsubscribe();
    upstream = undefined;
    subject = undefined;
  };

  const connect = (s: Subject<RecordedEvent>, after: Position) => {
    upstream = store.subscribeAll({ after }).subscribe({
      next: (e) => {
        last = e.position;
        s.next(e);
      },
      error: (err: unknown) => {
        if (subject === s) stop();
        s.error(err);
      },
      complete: () => {
        if (subject === s) stop();
        s.complete();
      },
    });
  };

  return {
    follow: (after) =>
      new Observable<RecordedEvent>((subscriber) => {
        let s = subject;
        const fresh = s === undefined;
        if (!s) {
          s = new Subject<RecordedEvent>();
          subject = s;
          last = after;
        } else if (order(after, last) < 0) {
          subscriber.error(new FeedAheadError());
          return;
        }
        followers++;
        // The feed is in `$all` order: once one event is past `after`, every later one is too, so
        // positions are compared only until then (a compare parses both positions).
        const inner = s.pipe(skipWhile((e) => order(e.position, after) <= 0)).subscribe(subscriber);
        // Connected after the first follower listens, so nothing emitted at once is lost.
        if (fresh) connect(s, after);
        const own = s;
        return () => {
          inner.unsubscribe();
          if (--followers === 0 && subject === own) stop();
        };
      }),
  };
}
