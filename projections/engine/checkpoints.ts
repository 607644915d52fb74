import { type ColumnType, CompiledQuery, type Kysely, sql } from 'kysely';
import type { Position } from '../../src/eventstore/port.ts';

/** The checkpoint table (migrations/20261122000200_projection_checkpoints.ts). */
export interface ProjectionCheckpointsTable {
  name: string;
  version: number;
  position: string;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

export interface CheckpointTables {
  projection_checkpoints: ProjectionCheckpointsTable;
}

export interface Checkpoint {
  readonly name: string;
  /** Version of the projection the live tables were built with. */
  readonly version: number;
  /** `$all` position of the last event applied to the live tables, or 'start'. */
  readonly position: Position;
  readonly updatedAt: Date;
}

/**
 * The compare-and-set failed: another writer (a standby that took over, or a rebuild's swap) moved
 * the checkpoint or changed its version. The batch was rolled back; the worker reloads and resumes.
 */
export class CheckpointMovedError extends Error {
  readonly projection: string;
  constructor(projection: string, expected: Position) {
    super(`checkpoint of ${projection} is no longer at ${expected}: another writer moved it`);
    this.name = 'CheckpointMovedError';
    this.projection = projection;
  }
}

// The table is the runtime's own bookkeeping, typed here rather than in the shared Database.
// biome-ignore lint/suspicious/noExplicitAny: accepts any Kysely (app-typed or a transaction)
type AnyDb = Kysely<any>;
const typed = (db: AnyDb): Kysely<CheckpointTables> => db as Kysely<CheckpointTables>;

const toCheckpoint = (r: {
  name: string;
  version: number;
  position: string;
  updated_at: Date;
}): Checkpoint => ({
  name: r.name,
  version: r.version,
  position: r.position,
  updatedAt: new Date(r.updated_at),
});

export async function readCheckpoints(db: AnyDb): Promise<Checkpoint[]> {
  const rows = await typed(db).selectFrom('projection_checkpoints').selectAll().orderBy('name').execute();
  return rows.map(toCheckpoint);
}

export async function readCheckpoint(db: AnyDb, name: string): Promise<Checkpoint | undefined> {
  const row = await typed(db)
    .selectFrom('projection_checkpoints')
    .selectAll()
    .where('name', '=', name)
    .executeTakeFirst();
  return row ? toCheckpoint(row) : undefined;
}

/** Row-locks the checkpoint for the rest of the transaction (a rebuild's swap). */
export async function lockCheckpoint(trx: AnyDb, name: string): Promise<Checkpoint | undefined> {
  const row = await typed(trx)
    .selectFrom('projection_checkpoints')
    .selectAll()
    .where('name', '=', name)
    .forUpdate()
    .executeTakeFirst();
  return row ? toCheckpoint(row) : undefined;
}

/**
 * Compare-and-set, first statement of every apply transaction: moves the checkpoint from `from` to
 * `to` only if it is still at `from` with the same version. The row lock it takes serialises
 * writers, so a writer that lost its advisory lock blocks here and then finds the row moved.
 * Throws CheckpointMovedError (the caller's transaction rolls back) when the row moved. Run on the
 * database itself (no transaction) it is one statement that commits alone: a batch of ignored
 * events moves the checkpoint that way. The statement is written out, not built: it runs for every
 * batch of every projection.
 */
export async function advanceCheckpoint(
  trx: AnyDb,
  args: { name: string; version: number; from: Position; to: Position },
): Promise<void> {
  const result = await trx.executeQuery(
    CompiledQuery.raw(ADVANCE_CHECKPOINT, [args.to, args.name, args.from, args.version]),
  );
  if (result.numAffectedRows !== 1n) throw new CheckpointMovedError(args.name, args.from);
}

const ADVANCE_CHECKPOINT =
  'update projection_checkpoints set position = $1, updated_at = now() where name = $2 and position = $3 and version = $4';

/** First start of a projection: records that its (fresh, empty) live tables are at 'start'. */
export async function insertCheckpoint(trx: AnyDb, name: string, version: number): Promise<boolean> {
  const result = await typed(trx)
    .insertInto('projection_checkpoints')
    .values({ name, version, position: 'start' })
    .onConflict((oc) => oc.column('name').doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) === 1n;
}

/** A rebuild's swap: the new tables are at `position`, built by `version`. */
export async function putCheckpoint(
  trx: AnyDb,
  args: { name: string; version: number; position: Position },
): Promise<void> {
  await typed(trx)
    .insertInto('projection_checkpoints')
    .values({ name: args.name, version: args.version, position: args.position })
    .onConflict((oc) =>
      oc.column('name').doUpdateSet({
        version: args.version,
        position: args.position,
        updated_at: sql<Date>`now()`,
      }),
    )
    .execute();
}
