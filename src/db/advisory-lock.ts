import type pg from 'pg';

/**
 * Runs `work` holding a session advisory lock on a connection of its own, or answers null at once
 * when another session (another instance) holds it: background jobs that one instance at a time
 * should run (retention, the friend-request expiry sweep) take turns, in every mode. `key` is any
 * bigint-sized number naming the job.
 */
export async function withAdvisoryLock<T>(
  pool: pg.Pool,
  key: number,
  work: () => Promise<T>,
): Promise<T | null> {
  const client = await pool.connect();
  try {
    const got = await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1) as ok', [key]);
    if (!got.rows[0]?.ok) return null;
    try {
      return await work();
    } finally {
      await client.query('select pg_advisory_unlock($1)', [key]);
    }
  } finally {
    client.release();
  }
}

export interface LockedJob<T> {
  /** One run now; null when another session holds the job's lock. */
  runOnce(): Promise<T | null>;
  start(): void;
  /** Stops the schedule and waits for a run in progress (which sees `stopped()` and ends early). */
  stop(): Promise<void>;
}

export interface LockedJobSpec<T> {
  readonly pool: pg.Pool;
  /** Names the job's advisory lock. */
  readonly lockKey: number;
  readonly intervalMs: number;
  readonly initialDelayMs: number;
  /** Told when a scheduled run fails (it is tried again at the next interval). */
  readonly onError: (err: unknown) => void;
  /** The work of one run; `stopped()` turns true once `stop()` was called, so a long run can end early. */
  readonly work: (stopped: () => boolean) => Promise<T>;
}

/**
 * A background job that one instance at a time runs every interval (retention, the friend-request
 * expiry sweep): each run under `withAdvisoryLock`, skipped while another session holds it; the
 * timer does not keep the process alive.
 */
export function createLockedJob<T>(spec: LockedJobSpec<T>): LockedJob<T> {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  let stopped = false;
  const isStopped = () => stopped;

  const runOnce = (): Promise<T | null> => {
    const p = withAdvisoryLock(spec.pool, spec.lockKey, () => spec.work(isStopped));
    running = p.catch(() => {});
    return p;
  };

  const schedule = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(async () => {
      try {
        await runOnce();
      } catch (err) {
        if (!stopped) spec.onError(err);
      }
      schedule(spec.intervalMs);
    }, delay);
    timer.unref();
  };

  return {
    runOnce,
    start() {
      stopped = false;
      schedule(spec.initialDelayMs);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
