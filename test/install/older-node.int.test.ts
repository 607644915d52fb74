import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The machine's own Node (Debian's, older than 24 here), if there is one: `node` without our PATH. */
async function olderNode(): Promise<{ dir: string; version: string } | undefined> {
  for (const dir of ['/usr/bin', '/usr/local/bin']) {
    try {
      const { stdout } = await run(path.join(dir, 'node'), ['-v']);
      const version = stdout.trim();
      if (Number(version.slice(1).split('.')[0]) < 24) return { dir, version };
    } catch {
      // no node there
    }
  }
  return undefined;
}

const old = await olderNode();
if (!old) console.warn('[skip] no Node.js older than 24 on this machine; the install check is not exercised');

describe.runIf(old)('npm ci on a Node.js older than 24 (issue 15)', () => {
  it('stops at once with EBADENGINE naming Node 24, before installing or building anything', async () => {
    const scratch = await mkdtemp(path.join(tmpdir(), 'hookline-old-node-'));
    try {
      for (const f of ['package.json', 'package-lock.json', '.npmrc']) {
        await copyFile(path.join(ROOT, f), path.join(scratch, f));
      }
      const failed = await run('npm', ['ci', '--no-audit', '--no-fund'], {
        cwd: scratch,
        env: {
          PATH: `${old!.dir}:/usr/bin:/bin`,
          HOME: scratch,
          npm_config_cache: path.join(scratch, 'cache'),
        },
      }).then(
        () => undefined,
        (err: { code: number; stderr: string }) => err,
      );
      expect(failed, 'npm ci succeeded on an old Node').toBeDefined();
      expect(failed!.stderr).toContain('EBADENGINE');
      expect(failed!.stderr).toContain('Required: {"node":">=24"}');
      expect(failed!.stderr).toContain(old!.version);
      expect(failed!.stderr).not.toMatch(/gyp|isolated-vm/);
      expect(await readdir(scratch)).not.toContain('node_modules');
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
