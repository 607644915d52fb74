import { EventSource } from 'eventsource';

/**
 * Follows GET /events across server restarts (README, "hookline events tail"). The `eventsource`
 * package gives up for good on an HTTP error (a 503 while the server stops) and waits for its own
 * reconnects on an unref'd timer, so a process that only waits on it exits when the server goes
 * away. Here each connection is one EventSource; when it fails it is closed and a new one opens
 * after a backoff, with `Last-Event-ID` set to the last position received, so the server replays
 * exactly what was missed. Delivery ids already shown are skipped, should a replay overlap.
 */

export interface FollowHandlers {
  /** One `event-received` message's data, parsed; never the same delivery id twice. */
  readonly onDelivery: (delivery: { id: number } & Record<string, unknown>) => void;
  /**
   * A line for the person (stderr): following, not reachable yet, lost, reconnected (a reset is
   * onReset's to word).
   */
  readonly notice: (text: string) => void;
  /**
   * The first connection's `ready`: every delivery up to the stream's head is in the log, and
   * every later one will come as an `event-received` (`hookline forward --from` replays up to here).
   */
  readonly onReady?: () => void;
  /**
   * The server could not replay what arrived while disconnected (a `reset`: more than its replay
   * bound, or a position it does not know) and follows live from its head; `why` says why, in
   * words, and `lastId` is the newest delivery the stream had sent (undefined: none yet). Each
   * command says what it does about the gap (forward fills it from the log, tail names `events list`).
   */
  readonly onReset: (why: string, lastId: number | undefined) => void;
}

export interface Follower {
  stop(): void;
  /** Settles once stopped. */
  readonly done: Promise<void>;
}

const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 5000;
const SEEN_KEPT = 10_000;

export function followEvents(server: string, handlers: FollowHandlers): Follower {
  const url = `${server}/events`;
  let lastEventId: string | null = null;
  let source: EventSource | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let delay = FIRST_DELAY_MS;
  let lostAt: number | undefined;
  let opened = false;
  let readied = false;
  const seen = new Set<number>();
  /** The newest delivery id the stream has sent. */
  let lastId: number | undefined;
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });

  const remember = (message: MessageEvent) => {
    if (message.lastEventId) lastEventId = message.lastEventId;
  };

  const connect = () => {
    const resumeFrom = lastEventId;
    const es = new EventSource(url, {
      fetch: (input, init) =>
        fetch(input, {
          ...init,
          headers: { ...init?.headers, ...(resumeFrom ? { 'last-event-id': resumeFrom } : {}) },
        }),
    });
    source = es;
    es.onopen = () => {
      delay = FIRST_DELAY_MS;
      if (lostAt !== undefined && opened) {
        const away = Math.round((Date.now() - lostAt) / 1000);
        handlers.notice(
          `(reconnected to ${url} after ${away} s${resumeFrom ? `; resuming after position ${resumeFrom}` : ''})`,
        );
      } else if (!opened) {
        handlers.notice(`Following ${url}; Ctrl-C to stop.`);
      }
      opened = true;
      lostAt = undefined;
    };
    es.onerror = (e) => {
      if (es !== source || stopped) return;
      es.close();
      const reason =
        e.message?.replace(/^TypeError: /, '') || (e.code ? `HTTP ${e.code}` : 'connection lost');
      if (lostAt === undefined) {
        lostAt = Date.now();
        // Nothing was lost if nothing was ever reached: a server not started yet, a wrong --url.
        handlers.notice(
          opened
            ? `(connection to ${url} lost: ${reason}; reconnecting until it is back, Ctrl-C to stop)`
            : `(cannot reach ${url}: ${reason}; trying again until it answers, Ctrl-C to stop)`,
        );
      }
      timer = setTimeout(connect, delay + Math.floor(Math.random() * delay * 0.2));
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    };
    es.addEventListener('ready', (message) => {
      remember(message);
      if (!readied) {
        readied = true;
        handlers.onReady?.();
      }
    });
    es.addEventListener('status', remember);
    es.addEventListener('reset', (message) => {
      remember(message);
      handlers.onReset(resetReason(message.data), lastId);
    });
    es.addEventListener('event-received', (message) => {
      remember(message);
      let delivery: { id: number } & Record<string, unknown>;
      try {
        delivery = JSON.parse(message.data) as { id: number } & Record<string, unknown>;
      } catch {
        return;
      }
      if (seen.has(delivery.id)) return;
      seen.add(delivery.id);
      lastId = Math.max(lastId ?? delivery.id, delivery.id);
      if (seen.size > SEEN_KEPT) seen.delete(seen.values().next().value as number);
      handlers.onDelivery(delivery);
    });
  };

  connect();
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      clearTimeout(timer);
      source?.close();
      finish();
    },
    done,
  };
}

function resetReason(data: string): string {
  try {
    const r = JSON.parse(data) as { reason?: string; replay_bound?: number };
    return r.reason === 'beyond_replay_bound'
      ? `more than ${r.replay_bound ?? 'its replay bound of'} events`
      : (r.reason ?? 'unknown');
  } catch {
    return 'unknown';
  }
}
