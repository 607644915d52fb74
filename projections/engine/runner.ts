import { setTimeout as sleep } from 'node:timers/promises';
import { type Clock, systemClock } from '../../src/clock.ts';
import type { SqlDatabase } from '../../src/db/open.ts';
import { HooklineError } from '../../src/errors.ts';
import { type EventStore, type Position, START } from '../../src/eventstore/port.ts';
import type { Logger } from '../../src/logger.ts';
import { readCheckpoint, readCheckpoints } from './checkpoints.ts';
import { createLiveFeed } from './feed.ts';
import { createLogCounter, type LogBacklog, type LogCounter, lagSeconds } from './lag.ts';
import { createLazyCheckpoints } from './lazy-checkpoints.ts';
import { createLockSession, type LockSession, lockHeldAnywhere, writerLockKey } from './lock.ts';
import { positionOrder, type RebuildDeps, rebuildProjection } from './rebuild.ts';
import type { Projection, ProjectionRunner, ProjectionStatus, RebuildProgress } from './types.ts';
import { createWorker, type Worker, type WorkerOptions } from './worker.ts';

export interface RunnerOptions extends Partial<WorkerOptions> {
  /** Events per rebuild transaction (default 1000). */
  readonly rebuildBatchSize?: number;
  /** Lag is counted up to this many events (status shows the cap when the backlog is longer). */
  readonly lagCap?: number;
  /** Default bound of `waitFor`. */
  readonly waitTimeoutMs?: number;
  /** How often `waitFor` reads the checkpoint of a projection another process writes. */
  readonly pollMs?: number;
}

export interface ProjectionRunnerDeps {
  readonly sql: SqlDatabase;
  readonly store: EventStore;
  readonly logger: Logger;
  readonly projections: readonly Projection[];
  readonly clock?: Clock;
  readonly options?: RunnerOptions;
}

const NAME = /^[a-z][a-z0-9_]*$/;

function validate(projections: readonly Projection[]): void {
  const seen = new Set<string>();
  const tables = new Map<string, string>();
  for (const p of projections) {
    if (!NAME.test(p.name)) throw new Error(`projection name ${JSON.stringify(p.name)} must match ${NAME}`);
    if (seen.has(p.name)) throw new Error(`two projections are named ${p.name}`);
    seen.add(p.name);
    if (!Number.isInteger(p.version) || p.version < 1)
      throw new Error(`projection ${p.name}: version must be an integer >= 1`);
    if (p.tables.length === 0) throw new Error(`projection ${p.name} declares no tables`);
    for (const t of p.tables) {
      const owner = tables.get(t);
      if (owner) throw new Error(`table ${t} is claimed by both ${owner} and ${p.name}`);
      tables.set(t, p.name);
    }
  }
}

/**
 * Runs one worker per projection (worker.ts), rebuilds on demand or on a version
 * change (rebuild.ts), reports status and lag, and lets a request wait, bounded, until
 * the read models have applied a position it appended.
 */
export function createProjectionRunner(deps: ProjectionRunnerDeps): ProjectionRunner {
  validate(deps.projections);
  const { sql, store, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const o = deps.options ?? {};
  const workerOptions: WorkerOptions = {
    batchSize: o.batchSize ?? 500,
    batchMs: o.batchMs ?? 50,
    // Under a busy log (50 events a window: 1,000 a second) a projection that lets its batches grow
    // doubles its window up to 4 times batchMs: bench/README.md, "Projection batches that grow".
    batchMaxMs: o.batchMaxMs ?? 4 * (o.batchMs ?? 50),
    busyEvents: o.busyEvents ?? 50,
    maxBuffered: o.maxBuffered ?? 5000,
    retryMinMs: o.retryMinMs ?? 100,
    retryMaxMs: o.retryMaxMs ?? 5000,
    standbyRetryMs: o.standbyRetryMs ?? 2000,
    lostLockCooldownMs: o.lostLockCooldownMs ?? 2 * (o.standbyRetryMs ?? 2000) + 1000,
    // Other processes (a standby, read-your-writes elsewhere) poll the checkpoint row.
    checkpointEveryMs: o.checkpointEveryMs ?? 100,
  };
  const lagCap = o.lagCap ?? 1_000_000;
  const waitTimeoutMs = o.waitTimeoutMs ?? 5000;
  const pollMs = o.pollMs ?? 50;
  const byName = new Map(deps.projections.map((p) => [p.name, p]));
  const counter: LogCounter = createLogCounter(store, sql);
  const cmp = positionOrder(store);
  const log = logger.child({ component: 'projections' });
  // Advisory locks: one writer per projection, standbys in other processes (design.md), every mode.
  const locks: LockSession | undefined = createLockSession(sql.pool, log);
  const rebuildDeps: RebuildDeps = {
    sql,
    store,
    counter,
    log,
    locks,
    // 1,000 on PostgreSQL: as fast as 2,000 (55,000 log events/s either way in bench:rebuild) with
    // less in flight across the two lanes and the read ahead (peak RSS 232 MB against 260 MB).
    batchSize: o.rebuildBatchSize ?? 1000,
  };

  const feed = createLiveFeed(store, cmp);
  // The checkpoints moved over ignored events, written for every projection in one statement.
  const lazy = createLazyCheckpoints(sql.db, workerOptions.checkpointEveryMs, log);
  const workers = new Map<string, Worker>();
  const rebuilding = new Set<string>();
  const stopCtl = new AbortController();
  let started = false;

  // Read-your-writes waiters wake on every committed batch in this process.
  let tick = Promise.withResolvers<void>();
  const notify = () => {
    const t = tick;
    tick = Promise.withResolvers<void>();
    t.resolve();
  };

  const find = (name: string): Projection => {
    const p = byName.get(name);
    if (!p) throw new HooklineError('not_found', `no projection named ${name}`, { projection: name });
    return p;
  };

  async function runRebuild(
    p: Projection,
    signal: AbortSignal,
    onProgress?: (progress: RebuildProgress) => void,
    pauseLive?: () => Promise<() => void>,
  ): Promise<void> {
    if (rebuilding.has(p.name))
      throw new HooklineError('conflict', `a rebuild of ${p.name} is already running`);
    rebuilding.add(p.name);
    try {
      await rebuildProjection(rebuildDeps, p, {
        onProgress,
        pauseLive,
        signal: AbortSignal.any([signal, stopCtl.signal]),
      });
    } finally {
      rebuilding.delete(p.name);
    }
  }

  function workerFor(p: Projection): Worker {
    return createWorker({
      projection: p,
      sql,
      store,
      log,
      options: workerOptions,
      locks,
      feed,
      lazy,
      onApplied: notify,
      autoRebuild: async (signal) => {
        // An operator's rebuild already under way does the same job: wait for it.
        if (rebuilding.has(p.name)) {
          while (rebuilding.has(p.name) && !signal.aborted) await sleep(pollMs);
          return;
        }
        await runRebuild(p, signal, undefined, undefined);
      },
    });
  }

  /** Has the live tables of `p` applied `position`? From this process's writer, else the checkpoint row. */
  async function reached(p: Projection, position: Position): Promise<boolean> {
    const w = workers.get(p.name);
    if (w && w.state === 'active' && w.liveVersion === p.version && w.position !== undefined) {
      if (cmp(w.position, position) >= 0) return true;
      if (!rebuilding.has(p.name)) return false;
    }
    const cp = await readCheckpoint(sql.db, p.name);
    return cp !== undefined && cp.version === p.version && cmp(cp.position, position) >= 0;
  }

  function stateOf(p: Projection): Promise<ProjectionStatus['state']> | ProjectionStatus['state'] {
    if (rebuilding.has(p.name)) return 'rebuilding';
    const w = workers.get(p.name);
    if (w) return w.state;
    // A process that runs no workers (the CLI) reports whether some other process writes it.
    if (locks)
      return lockHeldAnywhere(sql.db, writerLockKey(p.name)).then((held) => (held ? 'standby' : 'stopped'));
    return 'stopped';
  }

  return {
    start: async () => {
      if (started) return;
      started = true;
      for (const p of deps.projections) workers.set(p.name, workerFor(p));
      for (const w of workers.values()) w.start();
      await Promise.all([...workers.values()].map((w) => w.ready));
    },

    stop: async () => {
      stopCtl.abort();
      await Promise.all([...workers.values()].map((w) => w.stop()));
      lazy.close();
      while (rebuilding.size > 0) await sleep(pollMs);
      await locks?.close();
    },

    status: async (options = {}) => {
      const cap = options.lagCap ?? lagCap;
      const checkpoints = new Map((await readCheckpoints(sql.db)).map((c) => [c.name, c]));
      const backlogs = new Map<Position, Promise<LogBacklog>>();
      const backlogAt = (position: Position) => {
        let b = backlogs.get(position);
        if (!b) {
          b = counter.backlog(position, cap);
          backlogs.set(position, b);
        }
        return b;
      };
      const now = clock.now();
      return Promise.all(
        deps.projections.map(async (p): Promise<ProjectionStatus> => {
          const cp = checkpoints.get(p.name);
          // This process's writer may be ahead of its row over events the projection ignores.
          const w = workers.get(p.name);
          const local = w?.state === 'active' && w.liveVersion === p.version ? w.position : undefined;
          const stored = cp?.position ?? START;
          const position = local !== undefined && cmp(local, stored) > 0 ? local : stored;
          const backlog = await backlogAt(position);
          return {
            name: p.name,
            version: p.version,
            liveVersion: cp?.version ?? null,
            position,
            lagEvents: backlog.events,
            lagSeconds: lagSeconds(backlog, now),
            state: await stateOf(p),
            updatedAt: cp ? cp.updatedAt.toISOString() : null,
          };
        }),
      );
    },

    waitFor: async (position, options = {}) => {
      const targets = options.projection ? [find(options.projection)] : [...deps.projections];
      if (position === START || targets.length === 0) return;
      try {
        cmp(position, position);
      } catch {
        throw new HooklineError('bad_request', `not a position of this event store: ${position}`);
      }
      const timeoutMs = options.timeoutMs ?? waitTimeoutMs;
      const deadline = Date.now() + timeoutMs;
      let pending = targets;
      for (;;) {
        const wake = tick.promise;
        // A checkpoint read counts against the bound too: a database slow to answer must not
        // hold the caller past it (a late answer is dropped).
        const reads = Promise.all(pending.map((p) => reached(p, position)));
        reads.catch(() => {});
        const timer = new AbortController();
        const done = await Promise.race([
          reads,
          sleep(Math.max(0, deadline - Date.now()), undefined, { signal: timer.signal }).then(
            () => pending.map(() => false),
            () => pending.map(() => false),
          ),
        ]).finally(() => timer.abort());
        pending = pending.filter((_, i) => !done[i]);
        if (pending.length === 0) return;
        const left = deadline - Date.now();
        if (left <= 0) {
          const names = pending.map((p) => p.name);
          throw new HooklineError(
            'unavailable',
            `read model ${names.join(', ')} has not caught up with position ${position} within ${timeoutMs} ms`,
            { projections: names, position },
          );
        }
        await Promise.race([wake, sleep(Math.min(left, pollMs))]);
      }
    },

    rebuild: async (name, onProgress) => {
      const p = find(name);
      const w = workers.get(name);
      await runRebuild(p, stopCtl.signal, onProgress, w ? () => w.pause() : undefined);
    },
  };
}
