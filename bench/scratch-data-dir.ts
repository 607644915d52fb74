import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stopManagedPostgresIn } from '../src/db/managed-postgres.ts';

/**
 * An empty data directory for embedded mode (hookline initialises its PostgreSQL there on first
 * start); `remove()` stops that server if it still runs and deletes the directory.
 */
export async function scratchDataDir(name: string): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), `hookline-bench-${name}-`));
  await chmod(dir, 0o755); // PostgreSQL runs as another user when hookline runs as root
  return {
    dir,
    remove: async () => {
      await stopManagedPostgresIn(dir).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
