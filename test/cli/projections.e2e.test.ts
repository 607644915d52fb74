import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { freshDataDir, removeDataDir } from '../support/embedded.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';

const hasPg = await postgresAvailable();
const BIN = fileURLToPath(new URL('../../bin/hookline.mjs', import.meta.url));
const run = promisify(execFile);
// Each CLI run starts the data directory's PostgreSQL (a second on a busy 2-core machine), hence the long timeouts.

/** The environment of a CLI or server process of these tests, nothing inherited but PATH and HOME. */
const envOf = (extra: Record<string, string>) => ({
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  HOOKLINE_LOG_LEVEL: 'warn',
  ...extra,
});

async function hookline(args: string[], env: Record<string, string>) {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], {
      env: envOf(env),
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const ndjson = (text: string) =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { type: string; name: string; done?: number; total?: number });

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

describe('hookline projections status|rebuild', () => {
  const dirs: string[] = [];
  let server: ChildProcess | undefined;
  const tempDir = async () => {
    const d = await freshDataDir();
    dirs.push(d);
    return d;
  };

  afterEach(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server!.once('exit', resolve));
      server.kill('SIGTERM');
      await exited;
    }
    server = undefined;
  });
  afterAll(async () => {
    for (const d of dirs) await removeDataDir(d);
  });

  it('starts the embedded PostgreSQL itself when no server runs, and stops it again', async () => {
    const dir = await tempDir();
    const status = await hookline(['projections', 'status', '--json'], { HOOKLINE_DATA_DIR: dir });
    expect(status.code, status.stderr).toBe(0);
    const { projections } = JSON.parse(status.stdout) as {
      projections: Array<{ name: string; state: string }>;
    };
    expect(projections.map((p) => p.name)).toContain('stream_stats');
    expect(projections.every((p) => p.state === 'stopped')).toBe(true);

    const table = await hookline(['projections', 'status'], { HOOKLINE_DATA_DIR: dir });
    expect(table.stdout.split('\n')[0]).toMatch(
      /^NAME\s+VERSION\s+STATE\s+POSITION\s+LAG EVENTS\s+LAG SECONDS/,
    );
    expect(table.stdout).toMatch(/^stream_stats\s+1\s+stopped\s+start\s+0\s/m);

    const rebuilt = await hookline(['projections', 'rebuild', 'stream_stats', '--json'], {
      HOOKLINE_DATA_DIR: dir,
    });
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    expect(ndjson(rebuilt.stdout).at(-1)).toMatchObject({ type: 'done', name: 'stream_stats' });
    // The command started the data directory's PostgreSQL and stopped it when done.
    expect(existsSync(path.join(dir, 'pg', 'postmaster.pid'))).toBe(false);

    const unknown = await hookline(['projections', 'rebuild', 'nope'], { HOOKLINE_DATA_DIR: dir });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no projection named nope');
  }, 240_000);

  it('shares the PostgreSQL of a server running on the embedded data directory', async () => {
    const dir = await tempDir();
    const port = await freePort();
    const env = { HOOKLINE_DATA_DIR: dir, HOOKLINE_PORT: String(port) };
    server = spawn(process.execPath, [BIN, 'serve'], {
      env: envOf(env),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    server.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const deadline = Date.now() + 120_000;
    for (let up = false; !up; ) {
      if (server.exitCode !== null) throw new Error(`the server exited: ${stderr}`);
      if (Date.now() > deadline) throw new Error(`the server did not become healthy: ${stderr}`);
      up = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5000) }).then(
        (r) => r.ok,
        () => false,
      );
      if (!up) await sleep(200);
    }
    const status = await hookline(['projections', 'status', '--json'], env);
    expect(status.code, status.stderr).toBe(0);
    const { projections } = JSON.parse(status.stdout) as {
      projections: Array<{ name: string; state: string }>;
    };
    expect(projections.map((p) => p.name)).toContain('stream_stats');
    const postmaster = readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0];

    const rebuilt = await hookline(['projections', 'rebuild', 'all', '--json'], env);
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    const lines = ndjson(rebuilt.stdout);
    expect(lines.filter((l) => l.type === 'done').map((l) => l.name)).toEqual(projections.map((p) => p.name));
    expect(lines.some((l) => l.type === 'progress')).toBe(true);

    const unknown = await hookline(['projections', 'rebuild', 'nope'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no projection named nope');

    // The commands connected to the server's PostgreSQL and left it running for the server.
    expect(readFileSync(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]).toBe(postmaster);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
  }, 240_000);
});

describe.runIf(hasPg)('hookline projections on PostgreSQL', () => {
  let testDb: TestDatabase | undefined;
  afterAll(async () => {
    await testDb?.drop();
  });

  it('opens the database directly', async () => {
    testDb = await createTestDatabase();
    const env = { DATABASE_URL: testDb.url };
    const rebuilt = await hookline(['projections', 'rebuild', 'stream_stats', '--json'], env);
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    expect(ndjson(rebuilt.stdout).at(-1)).toMatchObject({ type: 'done', name: 'stream_stats' });
    const status = await hookline(['projections', 'status', '--json'], env);
    const { projections } = JSON.parse(status.stdout) as {
      projections: Array<Record<string, unknown>>;
    };
    expect(projections.find((p) => p.name === 'stream_stats')).toMatchObject({
      state: 'stopped',
      live_version: 1,
    });
    // snake_case, as every other --json of the CLI (issue 15).
    for (const p of projections) {
      expect(Object.keys(p).sort()).toEqual([
        'lag_events',
        'lag_seconds',
        'live_version',
        'name',
        'position',
        'state',
        'updated_at',
        'version',
      ]);
    }
    for (const line of ndjson(rebuilt.stdout)) {
      for (const key of Object.keys(line)) expect(key).toMatch(/^[a-z_]+$/);
    }
  });
});
