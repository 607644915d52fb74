import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/cli/package.ts';
import { BIN, postDelivery, readDeliveries, type ServerProcess, startHookline } from './harness.ts';

/** `npm start` on a fresh data directory: the embedded default, one process per directory. */
describe('hookline serve, embedded', () => {
  let dataDir: string;
  const running: ServerProcess[] = [];

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'hookline-e2e-'));
  });
  afterEach(async () => {
    for (const p of running.splice(0)) {
      if (p.child.exitCode === null && p.child.signalCode === null) p.kill('SIGKILL');
      await p.exited;
    }
    await rm(dataDir, { recursive: true, force: true });
  });

  const start = async (env: Record<string, string> = {}) => {
    const p = await startHookline(dataDir, env);
    running.push(p);
    return p;
  };

  it('answers /healthz and keeps a second process out, naming the holder', async () => {
    const first = await start();
    const health = await first.healthy();
    expect(health).toMatchObject({ status: 'ok', db: 'ok', database: 'ok', version: packageVersion() });

    const lock = JSON.parse(readFileSync(path.join(dataDir, 'hookline.lock'), 'utf8'));
    expect(lock).toMatchObject({ pid: first.pid, baseUrl: first.url });

    const second = await start();
    const { code } = await second.exited;
    expect(code).toBe(1);
    expect(second.stderr()).toContain(`pid ${first.pid}`);
    expect(second.stderr()).toContain(first.url);
    // The refused process left the holder alone.
    expect(await first.healthy()).toMatchObject({ status: 'ok' });
    expect(JSON.parse(readFileSync(path.join(dataDir, 'hookline.lock'), 'utf8')).pid).toBe(first.pid);

    // `hookline migrate` goes through the server that holds the directory instead of opening it.
    const migrate = spawnSync(process.execPath, [BIN, 'migrate'], {
      env: { PATH: process.env.PATH ?? '', HOOKLINE_DATA_DIR: dataDir },
      encoding: 'utf8',
    });
    expect(migrate.status).toBe(0);
    expect(migrate.stdout).toContain(`pid ${first.pid}`);
    expect(migrate.stdout).toContain('nothing to do');

    first.kill('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(path.join(dataDir, 'hookline.lock'))).toBe(false);
  });

  it('restarts after kill -9, clearing the stale lock, with every acknowledged delivery kept', async () => {
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

    first.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    // The dead holder's lock is still there: nothing cleaned up after a kill -9.
    expect(JSON.parse(readFileSync(path.join(dataDir, 'hookline.lock'), 'utf8')).pid).toBe(first.pid);

    const second = await start();
    expect(await second.healthy()).toMatchObject({ status: 'ok' });
    expect(second.stderr()).toContain(`stale lock`);
    expect(second.stderr()).toContain(`pid ${first.pid}`);
    expect(JSON.parse(readFileSync(path.join(dataDir, 'hookline.lock'), 'utf8')).pid).toBe(second.pid);

    // It keeps accepting after the restart, continuing the ids.
    const after = await postDelivery(second.url, JSON.stringify({ note: 'after the restart' }));
    expect(after.status).toBe(202);
    expect(after.ack.id).toBeGreaterThan(Math.max(...ids));

    second.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);

    const events = await readDeliveries(dataDir);
    const byId = new Map(events.map((e) => [Number(e.revision) + 1, new TextDecoder().decode(e.data)]));
    for (const [i, id] of ids.entries()) expect(byId.get(id)).toBe(bodies[i]);
    expect(byId.get(after.ack.id)).toBe(JSON.stringify({ note: 'after the restart' }));
  });
});
