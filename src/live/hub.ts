import { type Observable, Subject, type Subscription } from 'rxjs';
import type { Clock } from '../clock.ts';
import { TODO_EVENT_TYPES } from '../domain/todo/events.ts';
import type { EventStore, Position, RecordedEvent } from '../eventstore/port.ts';
import type { Logger } from '../logger.ts';
import type { Connection, StatusSnapshot } from './status.ts';
import { isDelivery, type LiveDelivery, toEventSummary } from './summary.ts';

export interface LiveHubOptions {
  /** An event within this window makes the indicator `receiving` (docs/reference/api.md, "Live stream"). */
  readonly activityWindowMs?: number;
  /** A `status` goes out this often even when nothing changes. */
  readonly heartbeatMs?: number;
  /**
   * Batches go out at most this often. 0 (the default): the deliveries of one read of the store's
   * live end (one every 10 ms at most, unless a read fills its page) go out together on the next turn of the loop. GET /events
   * paces its writes by what writing them costs (src/http/stream.ts), so a window here only added
   * to the wait: with 20 ms the subscriber-to-client p99 of bench:screens was 135 against 109 ms
   * at the same bursts and CPU (bench/README.md, issue 22).
   */
  readonly batchWindowMs?: number;
  /** Todo moves are announced at most this often, each once the read models have applied them. */
  readonly todoWindowMs?: number;
}

export const DEFAULT_ACTIVITY_WINDOW_MS = 60_000;
export const DEFAULT_HEARTBEAT_MS = 15_000;
export const DEFAULT_BATCH_WINDOW_MS = 0;
export const DEFAULT_TODO_WINDOW_MS = 100;

export interface LiveHubDeps {
  readonly store: EventStore;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Reads the providers and their counters from the read models. */
  readonly loadStatus: (connection: Connection) => Promise<StatusSnapshot>;
  /** Waits (bounded) until the read models have applied a position; best effort. */
  readonly settle?: (position: Position) => Promise<void>;
}

export type ReplayResult =
  | { readonly kind: 'events'; readonly events: readonly LiveDelivery[] }
  /** Too far behind (beyond the bound) or an unreadable position: the client must reload. */
  | { readonly kind: 'reset'; readonly reason: 'beyond_replay_bound' | 'unknown_position' };

/**
 * The one `$all` subscription of this process (design.md "Live"). It starts at the head when the
 * process starts, multicasts every accepted delivery to all SSE clients and MCP doorbells, and
 * tracks the receiving/idle indicator. Deliveries also come out coalesced (`batches$`: at most one
 * batch per window, or per read of the store), so a batch is serialized once for every client.
 */
export interface LiveHub {
  readonly activityWindowMs: number;
  readonly deliveries$: Observable<LiveDelivery>;
  readonly batches$: Observable<readonly LiveDelivery[]>;
  readonly status$: Observable<StatusSnapshot>;
  /** Every `DoorbellRung` (streams `doorbell-<endpoint id>`): the MCP doorbells listen here. */
  readonly doorbells$: Observable<RecordedEvent>;
  /**
   * A todo was created or moved (claimed, released, completed, …), coalesced and emitted once the
   * read models have it: the console's todo screens fetch their rows again. It says nothing of
   * whose todo it was; each screen reads its own human's rows.
   */
  readonly todoChanges$: Observable<Position>;
  connection(): Connection;
  /** A snapshot as of now: the cached one unless a delivery arrived since it was read. */
  status(): Promise<StatusSnapshot>;
  /** Deliveries strictly after `after`, at most `bound` of them; more than that is a reset. */
  replay(after: Position, bound: number): Promise<ReplayResult>;
  comparePositions(a: Position, b: Position): number;
  headPosition(): Promise<Position>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

const isDoorbell = (e: Pick<RecordedEvent, 'streamId' | 'type'>): boolean =>
  e.type === 'DoorbellRung' && e.streamId.startsWith('doorbell-');

const isTodoMove = (e: Pick<RecordedEvent, 'streamId' | 'type'>): boolean =>
  e.streamId.startsWith('todo-') && (TODO_EVENT_TYPES as readonly string[]).includes(e.type);

const REPLAY_PAGE = 500;
/** Other streams' events interleave in `$all`; a replay reads at most this many per delivery allowed. */
const REPLAY_SCAN_FACTOR = 20;

export function createLiveHub(deps: LiveHubDeps, options: LiveHubOptions = {}): LiveHub {
  const windowMs = options.activityWindowMs ?? DEFAULT_ACTIVITY_WINDOW_MS;
  const heartbeatMs = options.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const batchWindowMs = options.batchWindowMs ?? DEFAULT_BATCH_WINDOW_MS;
  const todoWindowMs = options.todoWindowMs ?? DEFAULT_TODO_WINDOW_MS;
  const { store, clock, logger } = deps;

  const deliveries = new Subject<LiveDelivery>();
  const batches = new Subject<readonly LiveDelivery[]>();
  const statuses = new Subject<StatusSnapshot>();
  const doorbells = new Subject<RecordedEvent>();
  const todoChanges = new Subject<Position>();

  let subscription: Subscription | undefined;
  let lastPosition: Position | undefined;
  let pending: LiveDelivery[] = [];
  let flushScheduled = false;
  let lastFlushAt = Number.NEGATIVE_INFINITY;
  let state: Connection = 'idle';
  let lastActivityMs = Number.NEGATIVE_INFINITY;
  let idleTimer: NodeJS.Timeout | undefined;
  let heartbeat: NodeJS.Timeout | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let cached: StatusSnapshot | undefined;
  /** A delivery arrived after the cached snapshot was read: its counters are stale. */
  let stale = true;
  let computing: Promise<StatusSnapshot> | undefined;
  let recomputeAfter = false;
  let running = false;
  let todoLatest: Position | undefined;
  let todoTimer: NodeJS.Timeout | undefined;
  let todoSettling = false;

  const flush = (): void => {
    flushScheduled = false;
    lastFlushAt = performance.now();
    const batch = pending;
    pending = [];
    if (batch.length > 0) batches.next(batch);
  };

  const compute = (): Promise<StatusSnapshot> => {
    if (computing) {
      recomputeAfter = true;
      return computing;
    }
    stale = false;
    computing = deps
      .loadStatus(state)
      .then((snapshot) => {
        cached = snapshot;
        return snapshot;
      })
      .finally(() => {
        computing = undefined;
        if (recomputeAfter && running) {
          recomputeAfter = false;
          void publish();
        }
      });
    return computing;
  };

  const publish = async (): Promise<void> => {
    try {
      statuses.next(await compute());
    } catch (err) {
      logger.warn({ err }, 'live: status snapshot failed');
    }
  };

  const scheduleIdle = (): void => {
    if (idleTimer || !running) return;
    const due = Math.max(0, lastActivityMs + windowMs - clock.now().getTime());
    idleTimer = setTimeout(() => {
      idleTimer = undefined;
      if (clock.now().getTime() - lastActivityMs >= windowMs) {
        state = 'idle';
        void publish();
      } else {
        scheduleIdle();
      }
    }, due + 5);
    idleTimer.unref();
  };

  const onDelivery = (d: LiveDelivery): void => {
    lastPosition = d.position;
    lastActivityMs = clock.now().getTime();
    stale = true;
    deliveries.next(d);
    pending.push(d);
    if (!flushScheduled) {
      flushScheduled = true;
      const wait = lastFlushAt + batchWindowMs - performance.now();
      if (wait <= 0) setImmediate(flush);
      else setTimeout(flush, wait);
    }
    if (state === 'idle') {
      state = 'receiving';
      // The counters in the snapshot come from the log read model: let it catch up first.
      const settle = deps.settle ? deps.settle(d.position).catch(() => {}) : Promise.resolve();
      void settle.then(publish);
    }
    scheduleIdle();
  };

  const announceTodos = async (): Promise<void> => {
    todoTimer = undefined;
    const at = todoLatest;
    if (at === undefined || !running) return;
    todoSettling = true;
    // The screens read the todos read model when told: let it apply the move first.
    if (deps.settle) await deps.settle(at).catch(() => {});
    todoSettling = false;
    if (!running) return;
    todoChanges.next(at);
    if (todoLatest === at) todoLatest = undefined;
    else scheduleTodos();
  };

  const scheduleTodos = (): void => {
    if (todoTimer || todoSettling || !running) return;
    todoTimer = setTimeout(() => void announceTodos(), todoWindowMs);
    todoTimer.unref();
  };

  const onTodoMove = (position: Position): void => {
    todoLatest = position;
    scheduleTodos();
  };

  const follow = (after: Position): void => {
    const filter = (e: Pick<RecordedEvent, 'streamId' | 'type'>) =>
      isDelivery(e) || isDoorbell(e) || isTodoMove(e);
    subscription = store.subscribeAll({ after, filter }).subscribe({
      next: (e) => {
        lastPosition = e.position;
        if (isDoorbell(e)) return doorbells.next(e);
        if (isTodoMove(e)) return onTodoMove(e.position);
        const summary = toEventSummary(e);
        if (summary) onDelivery({ position: e.position, summary });
      },
      error: (err: unknown) => {
        if (!running) return;
        logger.error({ err }, 'live: $all subscription failed; resubscribing');
        retryTimer = setTimeout(() => follow(lastPosition ?? after), 1000);
        retryTimer.unref();
      },
      complete: () => {
        if (running) logger.warn('live: $all subscription completed');
      },
    });
  };

  return {
    activityWindowMs: windowMs,
    deliveries$: deliveries.asObservable(),
    batches$: batches.asObservable(),
    status$: statuses.asObservable(),
    doorbells$: doorbells.asObservable(),
    todoChanges$: todoChanges.asObservable(),
    connection: () => state,
    // Concurrent callers share one read; a snapshot older than the newest delivery is read again.
    status: () => (cached && !stale ? Promise.resolve(cached) : compute()),
    comparePositions: (a, b) => store.comparePositions(a, b),
    headPosition: () => store.headPosition(),

    async replay(after, bound) {
      const found: LiveDelivery[] = [];
      let cursor = after;
      let scanned = 0;
      try {
        for (;;) {
          let page = 0;
          for await (const e of store.readAll({ after: cursor, maxCount: REPLAY_PAGE })) {
            page++;
            scanned++;
            cursor = e.position;
            const summary = isDelivery(e) ? toEventSummary(e) : null;
            if (summary) {
              if (found.length >= bound) return { kind: 'reset', reason: 'beyond_replay_bound' };
              found.push({ position: e.position, summary });
            }
          }
          if (page < REPLAY_PAGE) return { kind: 'events', events: found };
          if (scanned > bound * REPLAY_SCAN_FACTOR) return { kind: 'reset', reason: 'beyond_replay_bound' };
        }
      } catch (err) {
        logger.info({ err, after }, 'live: replay position not readable');
        return { kind: 'reset', reason: 'unknown_position' };
      }
    },

    async start() {
      if (running) return;
      running = true;
      const head = await store.headPosition();
      lastPosition = head;
      try {
        // Start "receiving" when the newest delivery is recent; the snapshot knows.
        const first = await compute();
        const newest = Math.max(
          ...first.providers.map((p) => (p.last_event_at ? Date.parse(p.last_event_at) : 0)),
          Number.NEGATIVE_INFINITY,
        );
        if (clock.now().getTime() - newest < windowMs) {
          lastActivityMs = newest;
          state = 'receiving';
          cached = { ...first, connection: 'receiving' };
          scheduleIdle();
        }
      } catch (err) {
        logger.warn({ err }, 'live: first status snapshot failed');
      }
      follow(head);
      heartbeat = setInterval(() => void publish(), heartbeatMs);
      heartbeat.unref();
    },

    async stop() {
      running = false;
      subscription?.unsubscribe();
      subscription = undefined;
      clearTimeout(idleTimer);
      clearTimeout(retryTimer);
      clearInterval(heartbeat);
      clearTimeout(todoTimer);
      idleTimer = undefined;
      flush();
      deliveries.complete();
      batches.complete();
      statuses.complete();
      doorbells.complete();
      todoChanges.complete();
      await computing?.catch(() => {});
    },
  };
}
