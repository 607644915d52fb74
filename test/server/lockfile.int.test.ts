import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  acquireDataDirLock,
  DataDirLockedError,
  LOCK_FILE,
  processAlive,
  readLockHolder,
} from '../../src/db/lockfile.ts';

/** The pid of a process that has exited (so signal 0 answers ESRCH). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

describe('data directory lock', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'hookline-lock-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes the holder as JSON and removes it on release', async () => {
    const lock = await acquireDataDirLock(dir, { baseUrl: 'http://127.0.0.1:9999' });
    const written = JSON.parse(await readFile(path.join(dir, LOCK_FILE), 'utf8'));
    expect(written).toMatchObject({ pid: process.pid, baseUrl: 'http://127.0.0.1:9999', command: 'serve' });
    expect(Number.isNaN(Date.parse(written.startedAt))).toBe(false);
    expect(lock.clearedStale).toBe(false);
    await lock.release();
    expect(await exists(path.join(dir, LOCK_FILE))).toBe(false);
    await lock.release(); // twice is harmless
  });

  it('refuses a second holder while the first is alive, naming its pid and URL', async () => {
    // The parent of this worker is alive and is not us: a live holder.
    const holder = {
      pid: process.ppid,
      startedAt: new Date().toISOString(),
      baseUrl: 'http://127.0.0.1:7777',
    };
    await writeFile(path.join(dir, LOCK_FILE), JSON.stringify(holder));
    const err = await acquireDataDirLock(dir).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataDirLockedError);
    expect((err as Error).message).toContain(`pid ${process.ppid}`);
    expect((err as Error).message).toContain('http://127.0.0.1:7777');
    expect(await readLockHolder(dir)).toMatchObject({ pid: process.ppid });
    // The refused attempt left the holder's lock alone.
    expect(JSON.parse(await readFile(path.join(dir, LOCK_FILE), 'utf8'))).toEqual(holder);
  });

  it('clears a dead holder’s lock together with PGlite’s postmaster.pid', async () => {
    const pid = await deadPid();
    expect(processAlive(pid)).toBe(false);
    await writeFile(path.join(dir, LOCK_FILE), JSON.stringify({ pid, startedAt: '2020-01-01T00:00:00Z' }));
    await mkdir(path.join(dir, 'pglite'));
    await writeFile(path.join(dir, 'pglite', 'postmaster.pid'), '-42\n/pglite/data\n');
    expect(await readLockHolder(dir)).toBeUndefined();

    const seen: unknown[] = [];
    const lock = await acquireDataDirLock(dir, { onStale: (h) => seen.push(h) });
    expect(lock.clearedStale).toBe(true);
    expect(seen).toEqual([{ pid, startedAt: '2020-01-01T00:00:00Z' }]);
    expect(await exists(path.join(dir, 'pglite', 'postmaster.pid'))).toBe(false);
    expect(JSON.parse(await readFile(path.join(dir, LOCK_FILE), 'utf8')).pid).toBe(process.pid);
    await lock.release();
  });

  it('treats a half-written lock as stale', async () => {
    await writeFile(path.join(dir, LOCK_FILE), '{"pid":');
    const lock = await acquireDataDirLock(dir);
    expect(lock.clearedStale).toBe(true);
    await lock.release();
  });

  it('lets exactly one of several processes racing for a stale lock win', async () => {
    await writeFile(path.join(dir, LOCK_FILE), JSON.stringify({ pid: await deadPid(), startedAt: 'then' }));
    const lockModule = new URL('../../src/db/lockfile.ts', import.meta.url).href;
    // Each racer reports won/refused, then holds until its stdin closes.
    const script = `
      const { acquireDataDirLock } = await import(${JSON.stringify(lockModule)});
      try {
        const lock = await acquireDataDirLock(${JSON.stringify(dir)});
        process.stdout.write('won\\n');
        process.stdin.resume();
        process.stdin.on('end', () => lock.release().then(() => process.exit(0)));
      } catch (err) {
        process.stdout.write(err.name === 'DataDirLockedError' ? 'refused\\n' : 'error ' + err.message + '\\n');
      }`;
    const racers = Array.from({ length: 5 }, () =>
      spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] }),
    );
    const outcomes = await Promise.all(
      racers.map(
        (child) =>
          new Promise<string>((resolve) => {
            let out = '';
            child.stdout.on('data', (d: Buffer) => {
              out += d.toString();
              if (out.includes('\n')) resolve(out.trim());
            });
            child.once('exit', () => resolve(out.trim()));
          }),
      ),
    );
    for (const child of racers) child.stdin.end();
    await Promise.all(
      racers.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : null)),
    );
    expect(outcomes.filter((o) => o === 'won')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'refused')).toHaveLength(racers.length - 1);
  });

  it('does not remove a lock that another process took after ours was released', async () => {
    const lock = await acquireDataDirLock(dir);
    await rm(path.join(dir, LOCK_FILE));
    const other = JSON.stringify({ pid: process.ppid, startedAt: 'now', baseUrl: 'http://other' });
    await writeFile(path.join(dir, LOCK_FILE), other);
    await lock.release();
    expect(await readFile(path.join(dir, LOCK_FILE), 'utf8')).toBe(other);
  });
});
