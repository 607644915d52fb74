import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { processAlive } from '../../src/db/managed-postgres.ts';
import { embeddedRoot } from '../support/embedded.ts';

/**
 * Embedded mode's managed PostgreSQL (src/db/managed-postgres.ts) at its edges: a data directory
 * whose path is too long for a socket, a platform without binaries, and a server that does not
 * start. Each start here is a real postmaster on a copy of the run's template cluster.
 */
const run = promisify(execFile);

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
