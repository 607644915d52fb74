import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type pg from 'pg';
import type { DB } from '../../src/db/database.ts';

/**
 * PostgreSQL session-level advisory locks for projection writers (design.md: one active writer per
 * projection across processes). Two-key form `(class, object)`: the class says what is locked,
 * the object is a hash of the projection name. Both are kept non-negative so they read the same
 * in pg_locks (whose columns are unsigned oids).
 */
export interface LockKey {
  readonly classId: number;
  readonly objectId: number;
}

const WRITER_CLASS = 0x686b6c6e; // 'hkln'
const REBUILD_CLASS = 0x686b6c72; // 'hklr'

const nameHash = (name: string): number =>
  createHash('sha256').update(name).digest().readUInt32BE(0) & 0x7fffffff;

/** The lock the active writer of a projection holds. */
export const writerLockKey = (projection: string): LockKey => ({
  classId: WRITER_CLASS,
  objectId: nameHash(projection),
});
/** The lock a rebuild holds, so two rebuilds of one projection never share its shadow schema. */
export const rebuildLockKey = (projection: string): LockKey => ({
  classId: REBUILD_CLASS,
  objectId: nameHash(projection),
});

const keyId = (k: LockKey): string => `${k.classId}:${k.objectId}`;

/** Whether any session on the cluster holds the lock (status of a process that writes nothing). */
export async function lockHeldAnywhere(db: DB, key: LockKey): Promise<boolean> {
  const { rows } = await sql<{ held: boolean }>`
    select exists (
      select 1 from pg_locks
      where locktype = 'advisory' and granted and objsubid = 2
        and classid = ${key.classId}::int8::oid and objid = ${key.objectId}::int8::oid
        and database = (select oid from pg_database where datname = current_database())
    ) as held`.execute(db);
  return rows[0]?.held === true;
}

/**
 * One dedicated pooled connection per runner holds every writer lock the runner has. If that
 * connection drops, PostgreSQL releases all of them at once and `onLost` listeners hear of it; the
 * next `tryLock` opens a fresh connection. (One connection rather than one per projection keeps a
 * handful of projections from pinning most of a small pool.)
 */
export interface LockSession {
  tryLock(key: LockKey): Promise<boolean>;
  unlock(key: LockKey): Promise<void>;
  holds(key: LockKey): boolean;
  onLost(listener: () => void): () => void;
  close(): Promise<void>;
}

export function createLockSession(pool: pg.Pool, log: { warn(obj: object, msg: string): void }): LockSession {
  let client: pg.PoolClient | undefined;
  const held = new Set<string>();
  const listeners = new Set<() => void>();
  let chain: Promise<unknown> = Promise.resolve();
  let closed = false;

  // Calls on the session run one at a time, so a lost connection is replaced once.
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn, fn);
    chain = next.catch(() => {});
    return next;
  };

  const drop = (c: pg.PoolClient, err: unknown) => {
    if (client !== c) return;
    client = undefined;
    const hadLocks = held.size > 0;
    held.clear();
    c.release(err instanceof Error ? err : new Error(String(err)));
    if (hadLocks) {
      log.warn({ err }, 'projection lock connection lost; its writer locks are released');
      for (const l of listeners) l();
    }
  };

  const connect = async (): Promise<pg.PoolClient> => {
    if (client) return client;
    const c = await pool.connect();
    // Without a listener an error on a checked-out client would crash the process.
    c.on('error', (err) => drop(c, err));
    c.on('end', () => drop(c, new Error('lock connection ended')));
    await c.query(`select set_config('application_name', 'hookline projection locks', false)`);
    client = c;
    return c;
  };

  return {
    tryLock: (key) =>
      serial(async () => {
        if (closed) return false;
        if (held.has(keyId(key))) return true;
        let c: pg.PoolClient | undefined;
        try {
          c = await connect();
          const { rows } = await c.query<{ ok: boolean }>(
            'select pg_try_advisory_lock($1::int4, $2::int4) as ok',
            [key.classId, key.objectId],
          );
          if (rows[0]?.ok !== true) return false;
          held.add(keyId(key));
          return true;
        } catch (err) {
          if (c) drop(c, err);
          return false;
        }
      }),
    unlock: (key) =>
      serial(async () => {
        if (!held.delete(keyId(key)) || !client) return;
        const c = client;
        try {
          await c.query('select pg_advisory_unlock($1::int4, $2::int4)', [key.classId, key.objectId]);
        } catch (err) {
          drop(c, err);
        }
      }),
    holds: (key) => held.has(keyId(key)),
    onLost: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: () =>
      serial(async () => {
        closed = true;
        const c = client;
        client = undefined;
        held.clear();
        if (!c) return;
        try {
          await c.query('select pg_advisory_unlock_all()');
          // Destroyed, not pooled: the session carried our application_name.
          c.release(true);
        } catch (err) {
          c.release(err instanceof Error ? err : new Error(String(err)));
        }
      }),
  };
}
