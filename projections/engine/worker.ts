import { setTimeout as sleep, setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { sql } from 'kysely';
import type { SqlDatabase } from '../../src/db/open.ts';
import type { EventStore, Position, RecordedEvent } from '../../src/eventstore/port.ts';
import type { Logger } from '../../src/logger.ts';
import { advanceCheckpoint, CheckpointMovedError, insertCheckpoint, readCheckpoint } from './checkpoints.ts';
import type { LiveFeed } from './feed.ts';
import { followLive, type LiveOutcome } from './follow.ts';
import type { LazyCheckpoints, LazyWriter } from './lazy-checkpoints.ts';
import { type LockSession, writerLockKey } from './lock.ts';
import { LIVE_SCHEMA, readBatch } from './rebuild.ts';
import type { Projection, ProjectionStatus } from './types.ts';

export interface WorkerOptions {
  /** Events per apply transaction (at most). */
  readonly batchSize: number;
  /** Live events are gathered this long before a batch is applied. */
  readonly batchMs: number;
  /** The longest window of a busy projection that lets its batches grow (Projection.batchGrows). */
  readonly batchMaxMs: number;
  /** A live batch that applied at least this many events makes such a projection busy (follow.ts). */
  readonly busyEvents: number;
  /** Live events buffered ahead of the writer before it drops the subscription and catches up by reading. */
  readonly maxBuffered: number;
  readonly retryMinMs: number;
  readonly retryMaxMs: number;
  /** How often a standby tries the writer lock (PostgreSQL). */
  readonly standbyRetryMs: number;
  /** After losing its lock connection a writer waits this long, so a healthy standby takes over first. */
  readonly lostLockCooldownMs: number;
  /** How often the checkpoint moves over events the projection ignores (see applyBatch). */
  readonly checkpointEveryMs: number;
}

export interface WorkerDeps {
  readonly projection: Projection;
  readonly sql: SqlDatabase;
  readonly store: EventStore;
  readonly log: Logger;
  readonly options: WorkerOptions;
  /** The writer locks (advisory locks); undefined only in tests of a worker alone. */
  readonly locks: LockSession | undefined;
  /** The runner's shared live subscription. */
  readonly feed: LiveFeed;
  /**
   * The runner's writer of lazily kept checkpoints, shared by its workers (one statement for all);
   * absent, the worker writes its own.
   */
  readonly lazy?: LazyCheckpoints;
  /** The live tables were built by an older version: rebuild them (the runner registers it as rebuilding). */
  autoRebuild(signal: AbortSignal): Promise<void>;
  /** Told after every committed batch (read-your-writes waiters). */
  onApplied(): void;
}

export interface Worker {
  readonly name: string;
  readonly state: ProjectionStatus['state'];
  /** The live checkpoint as this process last wrote or read it (when it is the writer). */
  readonly position: Position | undefined;
  /** Version of the projection that built the live tables, as last read. */
  readonly liveVersion: number | undefined;
  readonly updatedAt: Date | undefined;
  /** Settles once the worker has its live tables in place, found another writer, or first failed. */
  readonly ready: Promise<void>;
  start(): void;
  stop(): Promise<void>;
  /** Stops applying after the batch in flight; the returned function resumes. Used around a rebuild's swap. */
  pause(): Promise<() => void>;
}

const abortError = () => new DOMException('worker stopped', 'AbortError');

export function createWorker(deps: WorkerDeps): Worker {
  const { projection, store, options, locks } = deps;
  const db = deps.sql.db;
  const name = projection.name;
  const log = deps.log.child({ projection: name });
  const lockKey = writerLockKey(name);

  let state: ProjectionStatus['state'] = 'stopped';
  let position: Position | undefined;
  /** The checkpoint row as this writer last wrote or read it (behind `position` while ignored events are pending). */
  let written: Position | undefined;
  let lastWrite = 0;
  let liveVersion: number | undefined;
  let updatedAt: Date | undefined;
  /** The shared lazy writer found the row moved by another writer: the session resumes from the row. */
  let movedAway = false;
  const stopCtl = new AbortController();
  let running: Promise<void> | undefined;
  let session: AbortController | undefined;
  let inActive: Promise<unknown> | undefined;
  let gate: Promise<void> | undefined;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });

  /**
   * Moves the checkpoint from what is written to `to` (compare-and-set first: its row lock
   * serialises writers) and applies `handled` in the same transaction. Retries the same batch on
   * failure, never skips it.
   */
  async function commit(to: Position, handled: readonly RecordedEvent[], signal: AbortSignal): Promise<void> {
    await settleLazy();
    const fromPos = written!;
    let delay = options.retryMinMs;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw abortError();
      try {
        const move = { name, version: projection.version, from: fromPos, to };
        // Only the checkpoint moves (ignored events): one statement, no transaction around it.
        if (handled.length === 0) await advanceCheckpoint(db, move);
        else
          await db.transaction().execute(async (trx) => {
            await advanceCheckpoint(trx, move);
            await projection.apply(trx.withSchema(LIVE_SCHEMA), handled);
          });
        position = written = to;
        updatedAt = new Date();
        lastWrite = Date.now();
        deps.onApplied();
        return;
      } catch (err) {
        if (err instanceof CheckpointMovedError) throw err;
        log.error(
          { err, from: fromPos, to, events: handled.length, attempt },
          'projection batch failed; retrying it',
        );
        await sleep(delay, undefined, { signal });
        delay = Math.min(delay * 2, options.retryMaxMs);
      }
    }
  }

  /**
   * A batch the projection ignores changes no row, so its checkpoint is written lazily (at most
   * every `checkpointEveryMs`): a transaction per batch for every projection would crowd the
   * pool that ingestion uses. Until then this process's position runs ahead of the
   * row; after a crash the ignored events are read again, which changes nothing.
   */
  async function applyBatch(batch: readonly RecordedEvent[], signal: AbortSignal): Promise<number> {
    const to = batch[batch.length - 1]!.position;
    const handled = projection.handles ? batch.filter((e) => projection.handles!(e)) : batch;
    if (handled.length > 0) {
      await commit(to, handled, signal);
      return handled.length;
    }
    position = to;
    deps.onApplied();
    await flushIfDue(signal);
    return 0;
  }

  async function flushIfDue(signal: AbortSignal): Promise<void> {
    if (movedAway) throw new CheckpointMovedError(name, written!);
    if (position === written || signal.aborted) return;
    const lazy = deps.lazy;
    if (!lazy) {
      if (Date.now() - lastWrite >= options.checkpointEveryMs) await commit(position!, [], signal);
      return;
    }
    // The shared writer sends it with the other projections' at its next flush.
    lazy.put(name, lazyWriter);
  }

  const lazyWriter: LazyWriter = {
    pending: () =>
      position === undefined || written === undefined || position === written || movedAway
        ? undefined
        : { version: projection.version, from: written, to: position },
    done: (outcome, move) => {
      if (outcome === 'moved') {
        movedAway = true;
        return;
      }
      // This worker writes the row itself only after settleLazy: nothing else moved it meanwhile.
      if (written === move.from) {
        written = move.to;
        updatedAt = new Date();
        lastWrite = Date.now();
      }
    },
  };

  /**
   * Before this worker writes its row itself: the shared writer's move of it is dropped if not yet
   * sent, or waited for if in flight (the row then moved on, or another writer moved it).
   */
  async function settleLazy(): Promise<void> {
    if (!deps.lazy) return;
    await deps.lazy.settle(name);
    if (movedAway) throw new CheckpointMovedError(name, written!);
  }

  /** On leaving the writer's seat (stop, pause): one attempt to write a lazily kept checkpoint. */
  async function flushOnce(): Promise<void> {
    if (position === undefined || written === undefined || position === written) return;
    const to = position;
    try {
      await settleLazy();
      if (position === written) return;
      await advanceCheckpoint(db, { name, version: projection.version, from: written!, to });
      written = to;
    } catch (err) {
      log.debug({ err }, 'could not write the pending checkpoint; the ignored events will be read again');
    }
  }

  /** Reads (pull, so memory stays bounded) until a read comes back short. */
  async function catchUp(signal: AbortSignal): Promise<void> {
    for (;;) {
      if (signal.aborted) return;
      const batch = await readBatch(store, position!, options.batchSize);
      if (batch.length === 0) return;
      await applyBatch(batch, signal);
      if (batch.length < options.batchSize) return;
      await yieldToEventLoop(); // let network I/O in between batches
    }
  }

  const batching = {
    ...options,
    batchMaxMs: projection.batchGrows ? Math.max(options.batchMs, options.batchMaxMs) : options.batchMs,
  };
  const live = (signal: AbortSignal, shared: boolean): Promise<LiveOutcome> =>
    followLive({
      source: shared ? deps.feed.follow(position!) : store.subscribeAll({ after: position! }),
      signal,
      options: batching,
      apply: (batch) => applyBatch(batch, signal),
      pendingCheckpoint: () => position !== written,
      tick: () => flushIfDue(signal),
    });

  /** No checkpoint row: fresh, empty live tables at 'start', in one transaction. */
  async function initTables(): Promise<void> {
    await db.transaction().execute(async (trx) => {
      const tables = projection.tables.map((t) => sql.id(LIVE_SCHEMA, t));
      await sql`drop table if exists ${sql.join(tables)}`.execute(trx);
      await projection.createTables(trx.withSchema(LIVE_SCHEMA));
      if (!(await insertCheckpoint(trx, name, projection.version)))
        throw new CheckpointMovedError(name, 'none');
    });
    log.info({ version: projection.version }, 'projection tables created');
  }

  /** The writer's life while it may write: returns when its session is aborted, or 'incompatible'. */
  async function active(signal: AbortSignal): Promise<'aborted' | 'incompatible'> {
    let delay = options.retryMinMs;
    let behind = 0;
    while (!signal.aborted) {
      try {
        // The shared writer's move of this row, if any, is dropped or has landed: the row read is current.
        await deps.lazy?.settle(name);
        movedAway = false;
        const cp = await readCheckpoint(db, name);
        if (!cp) {
          await initTables();
          continue;
        }
        liveVersion = cp.version;
        position = written = cp.position;
        updatedAt = cp.updatedAt;
        if (cp.version > projection.version) {
          state = 'stopped';
          markReady();
          log.error(
            { liveVersion: cp.version, version: projection.version },
            'live tables were built by a newer version of this projection; not writing',
          );
          return 'incompatible';
        }
        if (cp.version < projection.version) {
          state = 'rebuilding';
          markReady();
          log.info({ from: cp.version, to: projection.version }, 'projection version changed: rebuilding');
          await deps.autoRebuild(signal);
          continue;
        }
        state = 'active';
        markReady();
        deps.onApplied();
        await catchUp(signal);
        // Behind the shared feed (it moved on while we read): read again and rejoin; after a few
        // tries under a busy log, follow with a subscription of our own this time.
        const outcome = await live(signal, behind < 3);
        behind = outcome === 'behind' ? behind + 1 : 0;
        if (outcome === 'completed') await sleep(options.retryMaxMs, undefined, { signal });
        delay = options.retryMinMs;
      } catch (err) {
        if (signal.aborted) break;
        if (err instanceof CheckpointMovedError) {
          log.info({ err }, 'checkpoint moved by another writer; resuming from it');
          continue;
        }
        markReady();
        log.error({ err }, 'projection worker failed; retrying');
        await sleep(delay, undefined, { signal }).catch(() => {});
        delay = Math.min(delay * 2, options.retryMaxMs);
      }
    }
    return 'aborted';
  }

  async function run(): Promise<void> {
    const stop = stopCtl.signal;
    const pause = (ms: number) => sleep(ms, undefined, { signal: stop }).catch(() => {});
    const stopped = new Promise<void>((resolve) =>
      stop.addEventListener('abort', () => resolve(), { once: true }),
    );
    while (!stop.aborted) {
      if (gate) {
        await Promise.race([gate, stopped]);
        continue;
      }
      if (locks && !(await locks.tryLock(lockKey))) {
        if (state !== 'standby') log.info('another process writes this projection; standing by');
        state = 'standby';
        markReady();
        await pause(options.standbyRetryMs);
        continue;
      }
      if (gate || stop.aborted) continue;
      const s = new AbortController();
      session = s;
      let lost = false;
      const onStop = () => s.abort();
      stop.addEventListener('abort', onStop);
      const offLost = locks?.onLost(() => {
        lost = true;
        s.abort();
      });
      const body = active(s.signal);
      inActive = body;
      let outcome: 'aborted' | 'incompatible' = 'aborted';
      try {
        outcome = await body;
      } finally {
        offLost?.();
        stop.removeEventListener('abort', onStop);
        session = undefined;
        inActive = undefined;
      }
      if (outcome === 'aborted' && !lost) await flushOnce();
      // A writer that lost its lock leaves its lazily kept checkpoint unwritten, as before.
      else await deps.lazy?.settle(name);
      if (outcome === 'incompatible') {
        // Leave the lock to a process that runs the newer version.
        await locks?.unlock(lockKey);
        await pause(locks ? options.standbyRetryMs : 2 ** 31 - 1);
      } else if (lost) {
        state = 'standby';
        await pause(options.lostLockCooldownMs);
      }
    }
    if (locks) await locks.unlock(lockKey);
    state = 'stopped';
  }

  return {
    name,
    get state() {
      return state;
    },
    get position() {
      return position;
    },
    get liveVersion() {
      return liveVersion;
    },
    get updatedAt() {
      return updatedAt;
    },
    ready,
    start: () => {
      running ??= run().catch((err: unknown) => {
        log.error({ err }, 'projection worker ended');
        state = 'stopped';
      });
    },
    stop: async () => {
      stopCtl.abort();
      await running;
      markReady();
    },
    pause: async () => {
      while (gate) await gate;
      let release!: () => void;
      gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      session?.abort();
      await inActive?.catch(() => {});
      return () => {
        gate = undefined;
        release();
      };
    },
  };
}
