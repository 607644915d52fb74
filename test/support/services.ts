import { randomBytes } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';

/**
 * Test suites that need a service ask here. Outside CI an unreachable service skips the suite
 * with a message; under CI=true it fails instead, so a green CI run always exercised it.
 */
export const PG_ADMIN_URL = process.env.HOOKLINE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.HOOKLINE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const isCI = process.env.CI === 'true' || process.env.CI === '1';

function reachable(url: string): Promise<boolean> {
  const u = new URL(url);
  const port = Number(u.port || (u.protocol.startsWith('redis') ? 6379 : 5432));
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname, port, timeout: 1000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

async function availability(name: string, url: string): Promise<boolean> {
  if (await reachable(url)) return true;
  if (isCI) throw new Error(`${name} is required under CI but is not reachable at ${url}`);
  console.warn(
    `[skip] ${name} not reachable at ${url}; suites that need it are skipped (they fail under CI=true)`,
  );
  return false;
}

/** Top-level await in a test file: `const hasPg = await postgresAvailable(); describe.runIf(hasPg)(...)`. */
export const postgresAvailable = (): Promise<boolean> => availability('PostgreSQL', PG_ADMIN_URL);
export const redisAvailable = (): Promise<boolean> => availability('Redis', REDIS_URL);

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  drop(): Promise<void>;
}

/** A fresh, uniquely named database on the shared server; `drop()` removes it (call it in afterAll). */
export async function createTestDatabase(prefix = 'hookline_test'): Promise<TestDatabase> {
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      try {
        await c.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A key prefix unique to one test run, for Redis. */
export const redisPrefix = (prefix = 'hookline-test'): string =>
  `${prefix}:${randomBytes(4).toString('hex')}:`;
