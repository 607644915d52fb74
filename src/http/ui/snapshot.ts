import { readCheckpoint } from '../../../projections/engine/checkpoints.ts';
import type { DB } from '../../db/database.ts';
import type { Position } from '../../eventstore/port.ts';

/** The projection whose rows the live screens show and whose checkpoint they resume from. */
const LOG_PROJECTION = 'log';

/**
 * Runs `read` in one repeatable-read transaction that also reads the log projection's checkpoint.
 * The projection writes its rows and its checkpoint in one transaction, so what `read` sees is
 * exactly the deliveries up to `position`: a page that opens its stream with `?after=<position>`
 * gets every later delivery once, and none that arrived between the render and the connect is
 * lost. `position` is null before the projection has a checkpoint (the stream then starts at the head).
 */
export async function readAtLogPosition<T>(
  db: DB,
  read: (trx: DB) => Promise<T>,
): Promise<{ readonly value: T; readonly position: Position | null }> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      // The checkpoint first: in repeatable read the snapshot is taken by the first statement.
      const checkpoint = await readCheckpoint(trx, LOG_PROJECTION);
      const value = await read(trx);
      return { value, position: checkpoint?.position ?? null };
    });
}
