import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hookline } from './cli.ts';

/** Every file below `dir` (the compile cache keeps one directory per Node version). */
async function filesIn(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

let home: string;
beforeEach(async () => {
  home = await mkdtemp(path.join(tmpdir(), 'hookline-compile-cache-'));
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

describe("the hookline binary keeps Node's module compile cache", () => {
  it("in the user's cache directory, so that the next start skips compiling", async () => {
    const run = await hookline(['--version'], { HOME: home });
    expect(run.code, run.stderr).toBe(0);
    expect(
      (await filesIn(path.join(home, '.cache', 'hookline', 'node-compile-cache'))).length,
    ).toBeGreaterThan(10);
  });

  it('under XDG_CACHE_HOME when it is set', async () => {
    const run = await hookline(['--version'], { HOME: home, XDG_CACHE_HOME: path.join(home, 'xdg') });
    expect(run.code, run.stderr).toBe(0);
    expect((await filesIn(path.join(home, 'xdg', 'hookline', 'node-compile-cache'))).length).toBeGreaterThan(
      10,
    );
    expect(await filesIn(path.join(home, '.cache'))).toEqual([]);
  });

  it("in NODE_COMPILE_CACHE's directory, and nowhere with NODE_DISABLE_COMPILE_CACHE=1 (Node's own variables)", async () => {
    const chosen = path.join(home, 'chosen');
    const run = await hookline(['--version'], { HOME: home, NODE_COMPILE_CACHE: chosen });
    expect(run.code, run.stderr).toBe(0);
    expect((await filesIn(chosen)).length).toBeGreaterThan(10);
    expect(await filesIn(path.join(home, '.cache'))).toEqual([]);

    const off = await hookline(['--version'], { HOME: home, NODE_DISABLE_COMPILE_CACHE: '1' });
    expect(off.code, off.stderr).toBe(0);
    expect(await filesIn(path.join(home, '.cache'))).toEqual([]);
  });

  it('still runs when the cache directory cannot be created', async () => {
    // A file where the cache's parent directory should be: the cache stays off, the command works.
    const run = await hookline(['--version'], { HOME: home, XDG_CACHE_HOME: '/dev/null/nowhere' });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
