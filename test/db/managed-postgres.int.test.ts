import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, lstat, mkdir, mkdtemp, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  fallbackSocketDir,
  LOG_FILE,
  ManagedPostgresError,
  processAlive,
  SERVER_OS_USER,
  startManagedPostgres,
} from '../../src/db/managed-postgres.ts';
import { openEmbedded } from '../../src/db/open.ts';
import { embeddedRoot, freshDataDir, removeDataDir } from '../support/embedded.ts';

/**
 * Embedded mode's managed PostgreSQL (src/db/managed-postgres.ts) at its edges: a data directory
 * whose path is too long for a socket, a platform without binaries, and a server that does not
 * start. Each start here is a real postmaster on a copy of the run's template cluster.
 */
const run = promisify(execFile);
const asRoot = process.getuid?.() === 0;
/** The uid the server (and so its socket directory) runs as: `postgres` when the tests run as root. */
const serverUid = async () =>
  asRoot ? Number((await run('id', ['-u', SERVER_OS_USER])).stdout.trim()) : process.getuid!();

/** A copy of the run's template cluster in `dir` (which must not exist yet), every level mode 0755. */
async function templateCopyAt(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  for (let d = dir; d !== embeddedRoot(); d = path.dirname(d)) await chmod(d, 0o755);
  await run('cp', ['-a', path.join(embeddedRoot(), 'template', 'pg'), path.join(dir, 'pg')]);
}

async function selectOne(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>('select 1 + 1 as n');
    return rows[0]!.n;
  } finally {
    await client.end();
  }
}

/** The socket directory of a managed server's connection string (`…@/db?host=<dir>&port=…`). */
const socketOf = (url: string) => new URLSearchParams(url.slice(url.indexOf('?') + 1)).get('host');

const postmasterPid = async (dataDir: string) =>
  Number((await readFile(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);

describe('a data directory whose path is too long for a socket', () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const f of cleanup.reverse()) await f().catch(() => {});
  });

  /** `<root>/long-…/data-…`: the cluster's path is well over the ~90 bytes a socket directory may have. */
  async function longDataDir(): Promise<{ dataDir: string; socketDir: string }> {
    const parent = await mkdtemp(path.join(embeddedRoot(), 'long-'));
    const dataDir = path.join(parent, `data-${'x'.repeat(40)}`, `y-${'z'.repeat(40)}`);
    await templateCopyAt(dataDir);
    cleanup.push(
      () => removeDataDir(dataDir),
      () => rm(parent, { recursive: true, force: true }),
    );
    expect(path.join(dataDir, 'pg').length).toBeGreaterThan(100);
    const socketDir = fallbackSocketDir(path.join(dataDir, 'pg'))!;
    expect(socketDir).toBeDefined();
    cleanup.push(() => rm(socketDir, { recursive: true, force: true }));
    return { dataDir, socketDir };
  }

  it('listens in one private directory for that data directory, serves, removes it on a clean stop, and uses it again on the next start', async () => {
    const { dataDir, socketDir } = await longDataDir();
    expect(existsSync(socketDir)).toBe(false);

    const first = await startManagedPostgres(dataDir, { database: 'postgres' });
    expect(socketOf(first.url)).toBe(socketDir);
    const s = await lstat(socketDir);
    expect(s.isDirectory()).toBe(true);
    expect(s.mode & 0o777).toBe(0o700);
    expect(s.uid).toBe(await serverUid());
    expect(await selectOne(first.url)).toBe(2);
    expect(await first.stop()).toBe(true);
    expect(existsSync(socketDir)).toBe(false);

    // The next start: the same directory, so the same connection string.
    const second = await startManagedPostgres(dataDir, { database: 'postgres' });
    expect(second.adopted).toBe(false);
    expect(second.url).toBe(first.url);
    expect(await selectOne(second.url)).toBe(2);
    // A second hookline on it adopts it and finds it there too.
    const adopter = await startManagedPostgres(dataDir, { database: 'postgres' });
    expect(adopter.adopted).toBe(true);
    expect(adopter.url).toBe(first.url);
    expect(await adopter.stop()).toBe(true);
    expect(existsSync(socketDir)).toBe(false);
  });

  it('after the watchdog starts a killed server again, the pool reaches it on the same socket', async () => {
    const { dataDir, socketDir } = await longDataDir();
    const errors: string[] = [];
    const infos: string[] = [];
    const sql = await openEmbedded(dataDir, { onError: (m) => errors.push(m), onInfo: (m) => infos.push(m) });
    try {
      expect(socketOf(sql.url)).toBe(socketDir);
      const killed = await postmasterPid(dataDir);
      process.kill(killed, 'SIGKILL');
      const deadline = Date.now() + 30_000;
      for (;;) {
        const again = await sql.pool
          .query<{ n: number }>('select 1 + 1 as n')
          .then((r) => r.rows[0]!.n)
          .catch(() => undefined);
        if (again === 2 && (await postmasterPid(dataDir).catch(() => killed)) !== killed) break;
        if (Date.now() > deadline) throw new Error(`no answer after the restart: ${errors.join('; ')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(errors[0]).toMatch(/is gone; starting it again$/);
      expect(errors.join('\n')).not.toMatch(/listens elsewhere|failed/);
    } finally {
      await sql.close();
    }
    expect(existsSync(socketDir)).toBe(false);
  });

  it('refuses a directory of that name that someone else made', async () => {
    const { dataDir, socketDir } = await longDataDir();
    await mkdir(socketDir, { mode: 0o777 });
    await chmod(socketDir, 0o777);
    const stranger = 65_534; // nobody
    if (asRoot) await chown(socketDir, stranger, stranger);
    try {
      const start = startManagedPostgres(dataDir, { database: 'postgres' });
      if (asRoot) {
        await expect(start).rejects.toThrow(ManagedPostgresError);
        await expect(start).rejects.toThrow(`${socketDir} (used because`);
        expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
      } else {
        // Unprivileged, the directory is this user's own: it is made private and used.
        const server = await start;
        expect((await lstat(socketDir)).mode & 0o777).toBe(0o700);
        await server.stop();
      }
    } finally {
      await rmdir(socketDir).catch(() => {});
    }
  });
});

describe('a start that cannot happen says why in one sentence', () => {
  it('a platform without a binary package: names DATABASE_URL as the way out', async () => {
    const dataDir = await mkdtemp(path.join(embeddedRoot(), 'no-binaries-'));
    const empty = await mkdtemp(path.join(embeddedRoot(), 'empty-package-'));
    try {
      const start = startManagedPostgres(dataDir, { binaryPackageDir: empty });
      await expect(start).rejects.toThrow(ManagedPostgresError);
      await expect(start).rejects.toThrow(
        /^embedded mode has no PostgreSQL binaries for this platform \(.+\)\. Set DATABASE_URL to a PostgreSQL server of your own \(server mode\) instead\.$/,
      );
      expect(existsSync(path.join(dataDir, 'pg'))).toBe(false);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await rm(empty, { recursive: true, force: true });
    }
  });

  it('a cluster PostgreSQL refuses (a PG_VERSION it cannot read): what PostgreSQL said, on one line, and where its log is', async () => {
    const dataDir = await freshDataDir();
    try {
      await writeFile(path.join(dataDir, 'pg', 'PG_VERSION'), '9\n');
      const err = await startManagedPostgres(dataDir).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ManagedPostgresError);
      const message = (err as Error).message;
      expect(message.split('\n')).toHaveLength(1);
      expect(message).toMatch(
        new RegExp(
          `^PostgreSQL did not start on ${dataDir}/pg: database files are incompatible with server; The data directory was initialized by PostgreSQL version 9, which is not compatible with this version [\\d.]+ \\(PostgreSQL's log: ${dataDir}/${LOG_FILE}\\)$`,
        ),
      );
    } finally {
      await removeDataDir(dataDir);
    }
  });
});

describe('processAlive', () => {
  /** A process's state letter from /proc (after the last `)`: the name may hold one). */
  const stateOf = async (pid: number) => {
    const stat = await readFile(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2)[0];
  };

  it.runIf(process.platform === 'linux')(
    'a zombie (exited, not reaped by its parent) is dead; its parent and a live process whose name holds ") Z " are alive',
    async () => {
      // sh starts `sleep 0` in the background, then becomes `sleep 5`, which never reaps it.
      const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 5'], {
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      const dir = await mkdtemp(path.join(embeddedRoot(), 'comm-'));
      let odd: ReturnType<typeof spawn> | undefined;
      try {
        const zombie = Number(
          await new Promise<string>((resolve) =>
            parent.stdout!.once('data', (c: Buffer) => resolve(c.toString())),
          ),
        );
        const deadline = Date.now() + 5_000;
        while ((await stateOf(zombie)) !== 'Z') {
          if (Date.now() > deadline) throw new Error(`${zombie} did not become a zombie`);
          await new Promise((r) => setTimeout(r, 10));
        }
        expect(processAlive(zombie)).toBe(false);
        expect(processAlive(parent.pid!)).toBe(true);

        // A program named `x) Z y`: its stat line reads `123 (x) Z y) S ...`.
        const { stdout: sleepPath } = await run('sh', ['-c', 'command -v sleep']);
        const named = path.join(dir, 'x) Z y');
        await run('ln', ['-s', sleepPath.trim(), named]);
        odd = spawn(named, ['5'], { stdio: 'ignore' });
        await new Promise((r) => odd!.once('spawn', r));
        const deadline2 = Date.now() + 5_000;
        while (!(await readFile(`/proc/${odd.pid}/stat`, 'latin1')).includes('(x) Z y)')) {
          if (Date.now() > deadline2) throw new Error('the program did not get its name');
          await new Promise((r) => setTimeout(r, 10));
        }
        expect(processAlive(odd.pid!)).toBe(true);
      } finally {
        const reaped = new Promise((r) => parent.once('exit', r));
        parent.kill('SIGKILL');
        odd?.kill('SIGKILL');
        await reaped; // by this process, its parent
        await rm(dir, { recursive: true, force: true });
      }
      expect(processAlive(parent.pid!)).toBe(false);
    },
  );
});
