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
