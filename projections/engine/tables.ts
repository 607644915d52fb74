import { sql } from 'kysely';
import type { DB } from '../../src/db/database.ts';

/** Whether a read model's table exists yet (a fresh database has none before the runner starts). */
export async function tableExists(db: DB, table: string): Promise<boolean> {
  const r = await sql<{ t: string | null }>`select to_regclass(${table})::text as t`.execute(db);
  return r.rows[0]?.t != null;
}
