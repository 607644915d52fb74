import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { CopyingClient } from './copy.ts';
import type { Database } from './database.ts';
import {
  type ManagedPostgres,
  type ManagedPostgresOptions,
  processAlive,
  startManagedPostgres,
} from './managed-postgres.ts';

// int8 (bigint) columns come back as strings by default; revisions and positions need exact values.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => BigInt(v));

/**
 * A handle on the PostgreSQL database that holds the read models (and, outside scale-out, the event
 * log): the server of DATABASE_URL, or embedded mode's own (managed-postgres.ts). One code path.
 */
export interface SqlDatabase {
  readonly kind: 'postgres';
  readonly db: Kysely<Database>;
  /** The pool, for LISTEN/NOTIFY, advisory locks and COPY. */
  readonly pool: pg.Pool;
  /** Where it connects: DATABASE_URL, or the managed server's socket (never logged: a password). */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * How long opening a connection, or waiting for a free one in the pool, may take. A healthy server
 * answers a startup in milliseconds; one that hangs would otherwise hold the request forever.
 */
export const CONNECT_TIMEOUT_MS = 5_000;

/**
 * How long one statement may wait for its answer before the caller gets an error (a request gets
 * its 503). Every statement hookline runs is kept short (batched appends, reads and deletes, design.md
 * "PostgreSQL hygiene"), so this is far above any healthy one, and low enough that an append still
 * gets its 503 before a sender's own timeout (10 s for GitHub) in the usual case. A statement that
 * times out may still have run and committed: the writer answers 503 and does not run it again
 * (errors.ts), and a redelivery finds the original. Not config: nothing healthy comes near it.
 */
export const QUERY_TIMEOUT_MS = 5_000;

/** How long close() waits for the server to close the pool's connections once they are ended. */
const CLOSE_WAIT_MS = 2_000;

/**
 * TCP keepalive on every connection, first probe after this long idle: a peer that vanished (host
 * down, connection dropped by a firewall) is found even on a connection that sends nothing, such as
 * the LISTEN one. A server that hangs but whose host answers is the query timeout's work.
 */
const KEEPALIVE_DELAY_MS = 10_000;

/**
 * node-pg leaves a statement that timed out active on its connection: the next user of that pooled
 * client would queue behind a server that does not answer or, once it does, find a transaction whose
 * ROLLBACK also timed out and was never sent. So the client closes itself, and the pool drops it
 * when it comes back (Kysely releases clients without an error).
 */
const ignoreClientError = (): void => {};

class BoundedClient extends CopyingClient {
  // biome-ignore lint/suspicious/noExplicitAny: pg's query() has many overloads; all pass through unchanged
  override query(...args: any[]): any {
    const result = (super.query as (...a: unknown[]) => unknown)(...args);
    if (!(result instanceof Promise)) return result; // callback or submittable: the caller sees the error
    return result.catch((err: unknown) => {
      if (err instanceof Error && err.message === 'Query read timeout') this.end().catch(() => {});
      throw err;
    });
  }
}

export interface PostgresOptions {
  readonly max?: number;
  /** Milliseconds; 0 for none (bulk loads of benchmarks). Default QUERY_TIMEOUT_MS. */
  readonly queryTimeoutMs?: number;
}

export function openPostgres(connectionString: string, options: PostgresOptions = {}): SqlDatabase {
  const queryTimeoutMs = options.queryTimeoutMs ?? QUERY_TIMEOUT_MS;
  const pool = new pg.Pool({
    Client: BoundedClient, // COPY FROM STDIN through Kysely (copy.ts), closed after a timeout
    connectionString,
    max: options.max ?? 16,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
    ...(queryTimeoutMs > 0 ? { query_timeout: queryTimeoutMs } : {}),
    // Long transactions stall the xid8 reader for everyone (design.md, PostgreSQL hygiene).
    idle_in_transaction_session_timeout: 30_000,
    application_name: 'hookline',
  });
  // An idle client's error (server restart) must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  // The pool's connections until their sockets close (pg-pool's end() resolves before they do).
  const open = new Set<pg.Client>();
  pool.on('connect', (client) => {
    open.add(client);
    // node-pg emits 'error' on a checked-out client whose connection dies between queries or under
    // a COPY (a terminated backend, a server restart), and the pool listens only on idle ones:
    // without a listener the process dies. The query in flight, or the next one, still fails and
    // is handled where it was issued. Every client of the pool, from its first connection on.
    client.on('error', ignoreClientError);
  });
  pool.on('remove', (client) => open.delete(client));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kind: 'postgres',
    db,
    pool,
    url: connectionString,
    close: async () => {
      await db.destroy();
      // Kysely ends the pool only if it ever ran a query (its driver starts on first use); a
      // pool used only directly (LISTEN, COPY, the first connection) is ended here.
      if (!pool.ending) await pool.end();
      // Closed when the server has closed every connection, so its backends have ended: embedded
      // mode then counts the server's other clients (managed-postgres.ts, stop) without these.
      if (open.size > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, CLOSE_WAIT_MS);
          pool.on('remove', () => {
            if (open.size > 0) return;
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
  };
}

/**
 * The pool's first connection, kept in the pool for the start's first queries: it also tells
 * whether the database exists. Refused with 3D000 (a database of a test's own, or one dropped
 * since), the database is created and the connection tried again; every other start, the first
 * included (it serves from the `postgres` database initdb made), opens no other.
 */
async function firstConnection(pool: pg.Pool, managed: ManagedPostgres): Promise<void> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    if ((err as { code?: string }).code !== '3D000') throw err;
    await managed.ensureDatabase();
    client = await pool.connect();
  }
  client.release();
}

/** How often embedded mode checks that its PostgreSQL still runs. */
const WATCH_MS = 1000;

/**
 * Embedded mode: starts (or adopts) the PostgreSQL of `<dataDir>/pg` and opens it as server mode
 * would. While open, a server that dies (killed, OOM) is started again, and PostgreSQL recovers
 * from its WAL: requests meanwhile get 503s, as with a server-mode database that restarts.
 * Closing ends the pool, then stops the server unless another client still uses it.
 */
export async function openEmbedded(
  dataDir: string,
  options: PostgresOptions & ManagedPostgresOptions & { readonly onError?: (message: string) => void } = {},
): Promise<SqlDatabase> {
  const startOptions = { ...options, databaseOnDemand: true };
  let managed = await startManagedPostgres(dataDir, startOptions);
  const sql = openPostgres(managed.url, options);
  try {
    await firstConnection(sql.pool, managed);
  } catch (err) {
    await sql.close().catch(() => {});
    await managed.stop().catch(() => {});
    throw err;
  }
  let closing = false;
  let restarting: Promise<void> | undefined;
  const watch = setInterval(() => {
    if (closing || restarting || processAlive(managed.pid)) return;
    options.onError?.(`the embedded PostgreSQL (pid ${managed.pid}) is gone; starting it again`);
    restarting = startManagedPostgres(dataDir, startOptions)
      .then((again) => {
        if (again.url !== managed.url) {
          options.onError?.('the restarted embedded PostgreSQL listens elsewhere; restart hookline');
        }
        managed = again;
      })
      .catch((err: unknown) =>
        options.onError?.(`starting the embedded PostgreSQL again failed: ${(err as Error).message}`),
      )
      .finally(() => {
        restarting = undefined;
      });
  }, WATCH_MS);
  watch.unref();
  return {
    ...sql,
    close: async () => {
      closing = true;
      clearInterval(watch);
      await restarting;
      try {
        await sql.close();
      } finally {
        await managed.stop();
      }
    },
  };
}
