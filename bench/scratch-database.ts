/**
 * A PostgreSQL database of a benchmark's own, created for one run and dropped after it, on the
 * server HOOKLINE_BENCH_PG_URL names (default the local one).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const BENCH_ADMIN_URL =
  process.env.HOOKLINE_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface ScratchDatabase {
  readonly url: string;
  /** Drops it, closing whatever connections are still open on it. */
  drop(): Promise<void>;
}

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: BENCH_ADMIN_URL });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

export async function createScratchDatabase(label: string): Promise<ScratchDatabase> {
  const name = `hookline_bench_${label}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  await admin(`create database "${name}"`);
  const url = new URL(BENCH_ADMIN_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`drop database if exists "${name}" with (force)`) };
}
