import { readFileSync, unlinkSync } from 'node:fs';
import { link, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { clearStalePglitePid } from './pglite-stale.ts';

/**
 * Embedded mode is one process (design.md): PGlite is one connection inside one process and does
 * not guard its data directory, so the process that opens it holds `<dataDir>/hookline.lock`.
 * A second process is refused naming the holder. A lock whose holder is dead is cleared, together
 * with PGlite's own `postmaster.pid`, without which PGlite can hang reopening the directory after
 * a `kill -9`.
 */

export const LOCK_FILE = 'hookline.lock';

export interface LockHolder {
  readonly pid: number;
  readonly startedAt: string;
  /** Where the holding server answers; absent when a CLI command holds the directory. */
  readonly baseUrl?: string;
  /** What holds it: `serve`, or the CLI command that opened the directory directly. */
  readonly command?: string;
}

export interface DataDirLock {
  readonly path: string;
  readonly holder: LockHolder;
  /** True when a dead holder's lock (and PGlite's postmaster.pid) had to be cleared first. */
  readonly clearedStale: boolean;
  /** Removes the lock if it is still ours. Safe to call more than once. */
  release(): Promise<void>;
}

export class DataDirLockedError extends Error {
  readonly holder: LockHolder;
  readonly lockPath: string;
  constructor(lockPath: string, holder: LockHolder) {
    const who = holder.baseUrl
      ? `the hookline server at ${holder.baseUrl}`
      : `hookline ${holder.command ?? ''}`.trim();
    super(
      `the data directory ${path.dirname(lockPath)} is in use by ${who} (pid ${holder.pid}, since ${holder.startedAt}). ` +
        'Embedded mode allows one process per data directory: stop that process first, or use another HOOKLINE_DATA_DIR. ' +
        `If no such process exists, remove ${lockPath}.`,
    );
    this.name = 'DataDirLockedError';
    this.holder = holder;
    this.lockPath = lockPath;
  }
}

const errno = (err: unknown): string | undefined =>
  err && typeof err === 'object' && 'code' in err ? String((err as { code: unknown }).code) : undefined;

/** A pid is alive when signal 0 reaches it; EPERM means alive but someone else's. */
export function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  // Our own pid in a lock we are about to take is a leftover: after a container restart the new
  // process often gets the pid the killed one had.
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errno(err) !== 'ESRCH';
  }
}

function parseHolder(raw: string): LockHolder | undefined {
  try {
    const v: unknown = JSON.parse(raw);
    if (v && typeof v === 'object' && 'pid' in v && typeof v.pid === 'number') return v as LockHolder;
  } catch {
    // A half-written lock (the holder died between create and write) is treated as stale.
  }
  return undefined;
}

/** The live holder of the data directory, if any (used by CLI commands to go through the server). */
export async function readLockHolder(dataDir: string): Promise<LockHolder | undefined> {
  let raw: string;
  try {
    raw = await readFile(path.join(dataDir, LOCK_FILE), 'utf8');
  } catch (err) {
    if (errno(err) === 'ENOENT') return undefined;
    throw err;
  }
  const holder = parseHolder(raw);
  return holder && processAlive(holder.pid) ? holder : undefined;
}

/**
 * Moves a dead holder's lock aside. Renaming is atomic, so of two processes clearing the same
 * stale lock only one moves it; if what we moved is not what we judged stale (another process
 * cleared it and took a fresh lock in between), it is put back.
 */
async function clearStaleLock(lockPath: string, judged: string): Promise<void> {
  const aside = `${lockPath}.stale-${process.pid}`;
  try {
    await rename(lockPath, aside);
  } catch (err) {
    if (errno(err) === 'ENOENT') return;
    throw err;
  }
  const moved = await readFile(aside, 'utf8').catch(() => '');
  if (moved !== judged) await link(aside, lockPath).catch(() => {});
  await rm(aside, { force: true });
}

export interface AcquireOptions {
  readonly baseUrl?: string;
  readonly command?: string;
  /** Told when a stale lock is cleared (the server logs it). */
  readonly onStale?: (holder: LockHolder | undefined) => void;
}

/** Takes the data directory for this process, or throws DataDirLockedError naming the holder. */
export async function acquireDataDirLock(
  dataDir: string,
  options: AcquireOptions = {},
): Promise<DataDirLock> {
  await mkdir(dataDir, { recursive: true });
  const lockPath = path.join(dataDir, LOCK_FILE);
  const holder: LockHolder = {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
    command: options.command ?? 'serve',
  };
  const content = `${JSON.stringify(holder)}\n`;
  let clearedStale = false;

  for (let attempt = 0; ; attempt++) {
    try {
      // 'wx' fails when the file exists: creating the lock is the atomic test-and-set.
      const fh = await open(lockPath, 'wx', 0o644);
      try {
        await fh.writeFile(content);
        await fh.sync();
      } finally {
        await fh.close();
      }
      break;
    } catch (err) {
      if (errno(err) !== 'EEXIST' || attempt >= 5) throw err;
    }
    const raw = await readFile(lockPath, 'utf8').catch((err: unknown) => {
      if (errno(err) === 'ENOENT') return undefined;
      throw err;
    });
    if (raw === undefined) continue; // released between our attempts
    const existing = parseHolder(raw);
    if (existing && processAlive(existing.pid)) throw new DataDirLockedError(lockPath, existing);
    options.onStale?.(existing);
    await clearStaleLock(lockPath, raw);
    clearedStale = true;
  }

  // Holding the lock, no live PGlite uses the directory: any postmaster.pid is a crash leftover.
  if (await clearStalePglitePid(dataDir)) clearedStale = true;

  let released = false;
  const releaseSync = () => {
    if (released) return;
    released = true;
    try {
      if (readFileSync(lockPath, 'utf8') === content) unlinkSync(lockPath);
    } catch {
      // Already gone.
    }
  };
  // A process.exit() that skips the graceful path still gives the directory back.
  process.once('exit', releaseSync);

  return {
    path: lockPath,
    holder,
    clearedStale,
    release: async () => {
      process.removeListener('exit', releaseSync);
      releaseSync();
    },
  };
}
