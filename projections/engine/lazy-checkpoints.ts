import { CompiledQuery, type Kysely } from 'kysely';
import type { Position } from '../../src/eventstore/port.ts';
import type { Logger } from '../../src/logger.ts';

// biome-ignore lint/suspicious/noExplicitAny: accepts any Kysely (app-typed or not)
type AnyDb = Kysely<any>;

/** A lazily kept checkpoint: compare-and-set from the row as its writer last wrote it. */
export interface LazyMove {
  readonly version: number;
  readonly from: Position;
  readonly to: Position;
}

/**
 * How a lazy move ended: 'written' (the row is at `to`) or 'moved' (the row was no longer at `from`
 * with that version: another writer moved it). A statement that fails is tried again at the next
 * flush, unless a newer move of the same projection replaced it meanwhile.
 */
export type LazyOutcome = 'written' | 'moved';

export interface LazyCheckpoints {
  /**
   * Asks for the projection's row to be written at the next flush. `pending` is read when the
   * statement is sent (undefined: nothing to write any more), so the move starts from the row as
   * the writer last wrote it; `done` is called with each move sent once it is written or found
   * moved.
   */
  put(name: string, writer: LazyWriter): void;
  /**
   * Drops the projection's queued move and waits for its move in flight, if any: after it, the
   * caller's own write of the row (its apply transaction, its write on stop) does not race ours.
   */
  settle(name: string): Promise<void>;
  /** Stops the timer; queued moves are dropped (each writer writes its own on stop). */
  close(): void;
}

export interface LazyWriter {
  pending(): LazyMove | undefined;
  done(outcome: LazyOutcome, move: LazyMove): void;
}

const FLUSH = `update projection_checkpoints c set position = v.to_position, updated_at = now()
  from unnest($1::text[], $2::int[], $3::text[], $4::text[]) as v(name, version, from_position, to_position)
  where c.name = v.name and c.version = v.version and c.position = v.from_position
  returning c.name`;

/**
 * The runner's writer of the checkpoints its projections move over events they ignore
 * (worker.ts, applyBatch). Each projection used to write its own row at most every
 * `everyMs`, one statement and one commit each: with a dozen projections that ignore most events,
 * about a hundred commits a second whenever the log moves (bench/README.md, "The agent path").
 * Now every projection's pending move goes in one statement at most every `everyMs`, each row
 * still compare-and-set on its own.
 */
export function createLazyCheckpoints(db: AnyDb, everyMs: number, log: Logger): LazyCheckpoints {
  let queued = new Map<string, LazyWriter>();
  const inFlight = new Map<string, Promise<void>>();
  let timer: NodeJS.Timeout | undefined;
  let lastFlush = 0;
  let closed = false;

  function arm(): void {
    if (timer || closed || queued.size === 0) return;
    const wait = Math.max(0, lastFlush + everyMs - Date.now());
    timer = setTimeout(() => {
      timer = undefined;
      void flush();
    }, wait);
    timer.unref();
  }

  async function flush(): Promise<void> {
    // A projection whose previous move is still in flight waits for the next flush.
    const batch: Array<[string, LazyWriter, LazyMove]> = [];
    for (const [name, w] of queued) {
      if (inFlight.has(name)) continue;
      queued.delete(name);
      const move = w.pending();
      if (move) batch.push([name, w, move]);
    }
    if (batch.length === 0) return;
    lastFlush = Date.now();
    const sent = (async () => {
      try {
        const result = await db.executeQuery<{ name: string }>(
          CompiledQuery.raw(FLUSH, [
            batch.map(([name]) => name),
            batch.map(([, , m]) => m.version),
            batch.map(([, , m]) => m.from),
            batch.map(([, , m]) => m.to),
          ]),
        );
        const written = new Set(result.rows.map((r) => r.name));
        for (const [name, w, m] of batch) w.done(written.has(name) ? 'written' : 'moved', m);
      } catch (err) {
        log.error(
          { err, projections: batch.map(([name]) => name) },
          'lazy checkpoints not written; retrying',
        );
        // Tried again at the next flush, unless a newer move of the same projection came meanwhile.
        for (const [name, w] of batch) if (!queued.has(name)) queued.set(name, w);
      }
    })();
    for (const [name] of batch) inFlight.set(name, sent);
    try {
      await sent;
    } finally {
      for (const [name] of batch) if (inFlight.get(name) === sent) inFlight.delete(name);
      arm();
    }
  }

  return {
    put(name, writer) {
      if (closed) return;
      queued.set(name, writer);
      arm();
    },
    async settle(name) {
      queued.delete(name);
      await inFlight.get(name);
      // A failed move that was queued again while we waited is dropped as well.
      queued.delete(name);
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      queued = new Map();
    },
  };
}
