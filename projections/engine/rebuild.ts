import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { sql } from 'kysely';
import type { DB } from '../../src/db/database.ts';
import type { SqlDatabase } from '../../src/db/open.ts';
import { HooklineError } from '../../src/errors.ts';
import { type EventStore, type Position, type RecordedEvent, START } from '../../src/eventstore/port.ts';
import { lockCheckpoint, putCheckpoint } from './checkpoints.ts';
import type { LogCounter } from './lag.ts';
import { type LockSession, rebuildLockKey } from './lock.ts';
import type { Projection, RebuildProgress } from './types.ts';

/** Live read-model tables sit in the default schema; readers never name a schema. */
export const LIVE_SCHEMA = 'public';
export const shadowSchemaFor = (projection: string): string => `hookline_rebuild_${projection}`;

export interface RebuildDeps {
  readonly sql: SqlDatabase;
  readonly store: EventStore;
  readonly counter: LogCounter;
  readonly log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** Events per replay transaction: small, so no long transaction holds back the xid8 reader. */
  readonly batchSize: number;
  /** Present on PostgreSQL: two rebuilds of one projection never share a shadow schema. */
  readonly locks: LockSession | undefined;
  readonly now?: () => number;
}

export function positionOrder(store: EventStore): (a: Position, b: Position) => number {
  return (a, b) => {
    if (a === b) return 0;
    if (a === START) return -1;
    if (b === START) return 1;
    return store.comparePositions(a, b);
  };
}

export async function readBatch(store: EventStore, after: Position, max: number): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for await (const e of store.readAll({ after, maxCount: max })) out.push(e);
  return out;
}

const abortError = () => new DOMException('rebuild aborted', 'AbortError');

/**
 * Runs `fn` in a transaction whose unqualified names resolve to `schema` first, so even a raw SQL
 * statement in a projection cannot touch the live tables while it is replayed elsewhere.
 */
async function inSchema<T>(db: DB, schema: string, fn: (scoped: DB) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    await sql`set local search_path to ${sql.id(schema)}, public`.execute(trx);
    return fn(trx.withSchema(schema));
  });
}

/** Creates `schema` afresh with the projection's tables, and checks it created exactly those. */
export async function prepareSchema(db: DB, projection: Projection, schema: string): Promise<void> {
  await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(db);
  await sql`create schema ${sql.id(schema)}`.execute(db);
  await inSchema(db, schema, (scoped) => projection.createTables(scoped));
  const { rows } = await sql<{ table_name: string }>`
    select table_name from information_schema.tables where table_schema = ${schema} order by table_name`.execute(
    db,
  );
  const made = rows.map((r) => r.table_name);
  const declared = [...projection.tables].sort();
  if (made.join(',') !== declared.join(',')) {
    throw new Error(
      `projection ${projection.name} declares tables [${declared.join(', ')}] but createTables made [${made.join(', ')}]`,
    );
  }
}

/** Applies events to the tables in `schema`; the shadow's position lives in memory (a crash discards the shadow). */
async function applyToSchema(
  db: DB,
  projection: Projection,
  schema: string,
  events: readonly RecordedEvent[],
) {
  const handled = projection.handles ? events.filter((e) => projection.handles!(e)) : events;
  if (handled.length === 0) return;
  await inSchema(db, schema, (scoped) => projection.apply(scoped, handled));
}

export interface ProgressTracker {
  readonly done: number;
  advance(events: number): void;
  finish(): void;
}

/**
 * done/total, rate and ETA. Reports the first and last time, and in between whenever `everyMs`
 * passed or another percent of the total was done, so a fast rebuild still shows its steps.
 */
export function progressTracker(
  name: string,
  total: number,
  onProgress: ((p: RebuildProgress) => void) | undefined,
  now: () => number = Date.now,
  everyMs = 200,
): ProgressTracker {
  const started = now();
  let done = 0;
  let lastReport = Number.NEGATIVE_INFINITY;
  let lastDone = Number.NEGATIVE_INFINITY;
  const report = (final: boolean) => {
    if (!onProgress) return;
    const t = now();
    if (!final && t - lastReport < everyMs && done - lastDone < total / 100) return;
    lastReport = t;
    lastDone = done;
    const shownTotal = final ? done : Math.max(total, done);
    const seconds = (t - started) / 1000;
    const ratePerSecond = seconds > 0 ? done / seconds : 0;
    const etaSeconds = final ? 0 : ratePerSecond > 0 ? (shownTotal - done) / ratePerSecond : null;
    onProgress({ name, done, total: shownTotal, ratePerSecond, etaSeconds });
  };
  report(false);
  return {
    get done() {
      return done;
    },
    advance: (n) => {
      done += n;
      report(false);
    },
    finish: () => report(true),
  };
}

/**
 * Batches a rebuild applies side by side on PostgreSQL when they commute (Projection.commutes):
 * one transaction keeps one backend busy, and the second keeps the other core of a small machine
 * working while this process reads and encodes the next batch.
 */
export const PARALLEL_APPLIES = 2;

/**
 * Replays the log after `from` into `schema` until a read comes back short (caught up with the
 * tail as it was then). On PostgreSQL the next batch is read while the current one is applied,
 * and batches of commuting events are applied up to PARALLEL_APPLIES at a time; a batch holding
 * any other event is applied alone, after every earlier batch and before any later one.
 */
export async function replay(
  deps: RebuildDeps,
  projection: Projection,
  schema: string,
  from: Position,
  progress: ProgressTracker,
  signal?: AbortSignal,
): Promise<Position> {
  const { store, batchSize } = deps;
  const db = deps.sql.db;
  const lanes = projection.commutes ? PARALLEL_APPLIES : 1;
  const commutes = (e: RecordedEvent) =>
    (projection.handles !== undefined && !projection.handles(e)) || projection.commutes!(e);
  const applying = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  const check = () => {
    if (failure) throw failure.error;
  };
  let position = from;
  let next: Promise<RecordedEvent[]> = readBatch(store, position, batchSize);
  try {
    for (;;) {
      if (signal?.aborted) throw abortError();
      const batch = await next;
      if (batch.length === 0) break;
      const last = batch[batch.length - 1]!.position;
      const full = batch.length === batchSize;
      if (full) next = readBatch(store, last, batchSize);
      const alone = lanes === 1 || !batch.every(commutes);
      if (alone) await Promise.all(applying);
      while (applying.size >= lanes) await Promise.race(applying);
      check();
      const done = applyToSchema(db, projection, schema, batch).then(
        () => progress.advance(batch.length),
        (error: unknown) => {
          failure ??= { error };
        },
      );
      applying.add(done);
      void done.finally(() => applying.delete(done));
      if (alone) await done;
      check();
      position = last;
      if (!full) break;
      // A turn of the event loop between batches: requests arriving over the network (ingestion)
      // wait for one batch, not the whole replay.
      await yieldToEventLoop();
    }
    await Promise.all(applying);
    check();
    return position;
  } finally {
    // Never leave a transaction writing into a schema the caller may drop next, nor a read ahead
    // failing unobserved (its error would mask the one that ended the replay).
    next.catch(() => undefined);
    await Promise.all(applying);
  }
}

/** Builds the projection's tables from the whole log into `schema` (rebuilds, and tests comparing with the live tables). */
export async function buildShadow(
  deps: RebuildDeps,
  projection: Projection,
  options: { schema?: string; onProgress?: (p: RebuildProgress) => void; signal?: AbortSignal } = {},
): Promise<{ schema: string; position: Position; progress: ProgressTracker }> {
  const schema = options.schema ?? shadowSchemaFor(projection.name);
  const total = (await deps.counter.backlog(START, Number.MAX_SAFE_INTEGER)).events;
  const progress = progressTracker(projection.name, total, options.onProgress, deps.now);
  await prepareSchema(deps.sql.db, projection, schema);
  const position = await replay(deps, projection, schema, START, progress, options.signal);
  return { schema, position, progress };
}

export interface RebuildOptions {
  readonly onProgress?: (p: RebuildProgress) => void;
  /** Pauses this process's live worker of the projection; returns its resume. Only the swap runs paused. */
  readonly pauseLive?: () => Promise<() => void>;
  readonly signal?: AbortSignal;
}

export interface RebuildResult {
  readonly name: string;
  readonly position: Position;
  readonly events: number;
}

// A live writer in another process may keep moving ahead of the shadow; after this many attempts the
// swap goes ahead anyway and that writer, finding its compare-and-set failed, resumes from ours.
const SWAP_ATTEMPTS = 5;

/**
 * Rebuild: fresh tables in a shadow schema, the log replayed into them in small transactions
 * while the live tables keep serving, a catch-up with the tail, then one short transaction that
 * drops the live tables, moves the new ones into the live schema and sets the checkpoint.
 */
export async function rebuildProjection(
  deps: RebuildDeps,
  projection: Projection,
  options: RebuildOptions = {},
): Promise<RebuildResult> {
  const { name } = projection;
  const lockKey = rebuildLockKey(name);
  if (deps.locks && !(await deps.locks.tryLock(lockKey))) {
    throw new HooklineError('conflict', `a rebuild of ${name} is already running in another process`);
  }
  const schema = shadowSchemaFor(name);
  const cmp = positionOrder(deps.store);
  const db = deps.sql.db;
  const started = (deps.now ?? Date.now)();
  try {
    const shadow = await buildShadow(deps, projection, {
      schema,
      onProgress: options.onProgress,
      signal: options.signal,
    });
    let position = shadow.position;
    const resume = options.pauseLive ? await options.pauseLive() : undefined;
    try {
      for (let attempt = 1; ; attempt++) {
        position = await replay(deps, projection, schema, position, shadow.progress, options.signal);
        if (deps.locks && !deps.locks.holds(lockKey)) {
          throw new HooklineError('unavailable', `lost the rebuild lock of ${name}; nothing was swapped`);
        }
        const at = position;
        const swapped = await db.transaction().execute(async (trx) => {
          const live = await lockCheckpoint(trx, name);
          if (
            live &&
            live.version === projection.version &&
            cmp(live.position, at) > 0 &&
            attempt < SWAP_ATTEMPTS
          ) {
            return false; // a writer elsewhere is ahead: catch up again, outside the lock
          }
          const tables = projection.tables.map((t) => sql.id(LIVE_SCHEMA, t));
          await sql`drop table if exists ${sql.join(tables)}`.execute(trx);
          for (const t of projection.tables) {
            await sql`alter table ${sql.id(schema, t)} set schema ${sql.id(LIVE_SCHEMA)}`.execute(trx);
          }
          await sql`drop schema ${sql.id(schema)}`.execute(trx);
          await putCheckpoint(trx, { name, version: projection.version, position: at });
          return true;
        });
        if (swapped) break;
      }
    } finally {
      resume?.();
    }
    shadow.progress.finish();
    const elapsedMs = (deps.now ?? Date.now)() - started;
    deps.log.info(
      { projection: name, version: projection.version, position, elapsedMs },
      'projection rebuilt',
    );
    return { name, position, events: shadow.progress.done };
  } finally {
    await deps.locks?.unlock(lockKey);
  }
}
