import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/cli/package.ts';
import { processAlive } from '../../src/db/managed-postgres.ts';
import { embeddedRoot, freshDataDir, removeDataDir } from '../support/embedded.ts';
import { BIN, postDelivery, readDeliveries, type ServerProcess, startHookline } from './harness.ts';

/** The postmaster that `<dataDir>/pg/postmaster.pid` names, or undefined when none is recorded. */
function postmaster(dataDir: string): { pid: number; socketDir: string; listen: string } | undefined {
  const file = path.join(dataDir, 'pg', 'postmaster.pid');
  if (!existsSync(file)) return undefined;
  const lines = readFileSync(file, 'utf8').split('\n');
  return { pid: Number(lines[0]), socketDir: lines[4] ?? '', listen: lines[5] ?? '' };
}

async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * `npm start` in embedded mode: hookline runs its own PostgreSQL in `<HOOKLINE_DATA_DIR>/pg`
 * (src/db/managed-postgres.ts), the real binary in a subprocess.
 */
describe('hookline serve, embedded (its own PostgreSQL)', () => {
  let dataDir: string;
  const running: ServerProcess[] = [];

  afterEach(async () => {
    for (const p of running.splice(0)) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.kill('SIGKILL');
      await p.exited;
    }
    await removeDataDir(dataDir);
  });

  const start = async (env: Record<string, string> = {}) => {
    const p = await startHookline(dataDir, env);
    running.push(p);
    return p;
  };

  it('initialises and starts PostgreSQL on first start; a second hookline shares it; the last one out stops it', async () => {
    const root = embeddedRoot();
    dataDir = await mkdtemp(path.join(root, 'first-start-'));
    await chmod(dataDir, 0o755);
    const first = await start();
    expect(await first.healthy()).toMatchObject({ status: 'ok', database: 'ok', version: packageVersion() });

    // A Unix socket only, in the cluster's own directory (mode 0700); no TCP address.
    const pm = postmaster(dataDir)!;
    expect(processAlive(pm.pid)).toBe(true);
    expect(pm.listen.trim()).toBe('');
    expect(pm.socketDir).toBe(path.join(dataDir, 'pg'));
    expect(statSync(path.join(dataDir, 'pg')).mode & 0o777).toBe(0o700);
    const credentials = path.join(dataDir, 'pg', 'hookline.json');
    expect(statSync(credentials).mode & 0o777).toBe(0o600);
    expect(existsSync(path.join(dataDir, 'postgres.log'))).toBe(true);

    // Durable as any PostgreSQL: fsync and synchronous_commit on.
    const { user, password, database } = JSON.parse(readFileSync(credentials, 'utf8')) as {
      user: string;
      password: string;
      database: string;
    };
    // It serves from the cluster's own `postgres` database: a first start creates none.
    expect(database).toBe('postgres');
    const client = new pg.Client({ host: pm.socketDir, user, password, database });
    await client.connect();
    const settings = await client.query<{ name: string; setting: string }>(
      "select name, setting from pg_settings where name in ('fsync', 'synchronous_commit', 'listen_addresses')",
    );
    const names = await client.query<{ datname: string }>('select datname from pg_database order by datname');
    const served = await client.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'hookline'",
    );
    await client.end();
    expect(names.rows.map((r) => r.datname)).toEqual(['postgres', 'template0', 'template1']);
    expect(served.rows[0]!.n).toBeGreaterThan(0);
    expect(Object.fromEntries(settings.rows.map((r) => [r.name, r.setting]))).toEqual({
      fsync: 'on',
      synchronous_commit: 'on',
      listen_addresses: '',
    });

    // A second hookline on the same directory adopts the running server instead of starting one.
    const second = await start();
    expect(await second.healthy()).toMatchObject({ status: 'ok' });
    expect(postmaster(dataDir)!.pid).toBe(pm.pid);

    // `hookline migrate` connects directly, to the same server.
    const migrate = spawnSync(process.execPath, [BIN, 'migrate'], {
      env: { PATH: process.env.PATH ?? '', HOOKLINE_DATA_DIR: dataDir },
      encoding: 'utf8',
    });
    expect(migrate.status, migrate.stderr).toBe(0);
    expect(migrate.stdout).toContain('embedded: the schema is up to date');
    expect(processAlive(pm.pid)).toBe(true);

    // The first one stops gracefully: the server stays for the second.
    first.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    expect(processAlive(pm.pid)).toBe(true);
    expect(await second.healthy()).toMatchObject({ status: 'ok' });

    // The last one out stops it.
    second.kill('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(processAlive(pm.pid)).toBe(false);
    expect(postmaster(dataDir)).toBeUndefined();
  });

  it('after kill -9 of hookline, the next start adopts the orphaned server; every acknowledged delivery is kept', async () => {
    dataDir = await freshDataDir();
    const first = await start();
    await first.healthy();
    const bodies = Array.from({ length: 12 }, (_, i) =>
      JSON.stringify({ n: i, note: `before the kill ${i}` }),
    );
    const ids: number[] = [];
    for (const body of bodies) {
      const { status, ack } = await postDelivery(first.url, body);
      expect(status).toBe(202);
      ids.push(ack.id);
    }
    const pm = postmaster(dataDir)!;

    first.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    // Nothing cleaned up after a kill -9: the server still runs, orphaned.
    expect(processAlive(pm.pid)).toBe(true);

    const second = await start();
    expect(await second.healthy()).toMatchObject({ status: 'ok' });
    expect(postmaster(dataDir)!.pid).toBe(pm.pid); // adopted, not a second server

    const after = await postDelivery(second.url, JSON.stringify({ note: 'after the restart' }));
    expect(after.status).toBe(202);
    expect(after.ack.id).toBeGreaterThan(Math.max(...ids));

    second.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    expect(processAlive(pm.pid)).toBe(false);

    const events = await readDeliveries(dataDir);
    const byId = new Map(events.map((e) => [Number(e.revision) + 1, new TextDecoder().decode(e.data)]));
    for (const [i, id] of ids.entries()) expect(byId.get(id)).toBe(bodies[i]);
    expect(byId.get(after.ack.id)).toBe(JSON.stringify({ note: 'after the restart' }));
  });

  it('after kill -9 of hookline and of its postmaster, the next start recovers the server; every acknowledged delivery is kept', async () => {
    dataDir = await freshDataDir();
    const first = await start();
    await first.healthy();
    const ids: number[] = [];
    for (let i = 0; i < 8; i++) {
      const { status, ack } = await postDelivery(first.url, JSON.stringify({ i }));
      expect(status).toBe(202);
      ids.push(ack.id);
    }
    const pm = postmaster(dataDir)!;
    first.kill('SIGKILL');
    process.kill(pm.pid, 'SIGKILL');
    await first.exited;
    await until('the postmaster is gone', () => !processAlive(pm.pid));
    // Its pid file stays behind, naming a dead process.
    expect(postmaster(dataDir)?.pid).toBe(pm.pid);

    const second = await start();
    expect(await second.healthy()).toMatchObject({ status: 'ok' });
    expect(postmaster(dataDir)!.pid).not.toBe(pm.pid);
    second.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);

    const events = await readDeliveries(dataDir);
    expect(events.map((e) => Number(e.revision) + 1)).toEqual(ids);
  });

  it('refuses a data directory left by the PGlite version, with a sentence', async () => {
    const root = embeddedRoot();
    dataDir = await mkdtemp(path.join(root, 'pglite-era-'));
    await mkdir(path.join(dataDir, 'pglite'));
    const p = await start();
    const { code } = await p.exited;
    expect(code).toBe(1);
    expect(p.stderr()).toContain('PGlite');
    expect(p.stderr()).toContain('HOOKLINE_DATA_DIR');
    expect(p.stderr()).not.toMatch(/\n\s+at /); // a sentence, not a stack
    expect(existsSync(path.join(dataDir, 'pg'))).toBe(false);
    await rm(path.join(dataDir, 'pglite'), { recursive: true });
  });
});
