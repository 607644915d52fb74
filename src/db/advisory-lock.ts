import type pg from 'pg';

/**
 * Runs `work` while a session of the pool holds the advisory lock `key` (single-key form, an
 * int8), released when it ends; null, without running it, when another session holds the lock.
 * Keeps one job (the retention prune) to one instance at a time.
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
