import { unlink } from 'node:fs/promises';
import path from 'node:path';

/** Where openPglite keeps PGlite's files inside the data directory (src/db/open.ts). */
export const PGLITE_SUBDIR = 'pglite';

/**
 * Removes the `postmaster.pid` a killed PGlite leaves in its directory; without this PGlite hangs
 * when it reopens the directory after a `kill -9` (design.md, "Embedded mode is one process").
 * Call it only while holding the data-directory lock, so no live PGlite can be using the file.
 * Returns whether there was one to remove.
 */
export async function clearStalePglitePid(dataDir: string): Promise<boolean> {
  try {
    await unlink(path.join(dataDir, PGLITE_SUBDIR, 'postmaster.pid'));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
