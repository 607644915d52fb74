import type { Kysely } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import type { RecordedEvent } from '../../src/eventstore/port.ts';

/**
 * A read model built from `$all`. The runner applies batches of events inside one transaction
 * and writes the checkpoint in that same transaction (style.md §9), so each event is applied
 * exactly once even across crashes.
 *
 * A projection owns its tables' DDL (not migrations/): a rebuild creates fresh copies in a shadow
 * schema, replays the log into them while the live tables keep serving, then swaps the schemas.
 * So every statement goes through the `db` it is handed, which is already scoped with
 * `withSchema(...)`: never name a schema yourself.
 */
export interface Projection {
  /** Stable name, `[a-z][a-z0-9_]*`; used by `hookline projections rebuild <name>`. */
  readonly name: string;
  /** Bump when the table shape or the meaning of apply changes: the runner rebuilds on start. */
  readonly version: number;
  /** Every table the projection owns (their rows are rebuilt from the log). */
  readonly tables: readonly string[];
  /** Creates the tables and their indexes with `db.schema.createTable(...)`, `ifNotExists`. */
  createTables(db: Kysely<Database>): Promise<void>;
  /** Cheap pre-filter; events it rejects still advance the checkpoint. Default: every event. */
  handles?(event: Pick<RecordedEvent, 'streamId' | 'type'>): boolean;
  /**
   * True for events whose effect does not depend on the order in which batches commit, such as
   * the insert of a row that nothing else writes. A rebuild on PostgreSQL applies batches made
   * only of such events side by side; a batch holding any other event first waits for every
   * earlier batch. Default: no event commutes (batches apply one after another).
   */
  commutes?(event: Pick<RecordedEvent, 'streamId' | 'type'>): boolean;
  /**
   * Under a busy log (a live batch of at least the runner's `busyEvents`) the live window may grow,
   * doubling per busy batch up to the runner's `batchMaxMs`, so the projection commits fewer,
   * larger batches; it returns to `batchMs` after the first batch that is not busy. Leave it unset
   * for a read model whose readers wait on it under load (a claim, a doorbell). Default: false.
   */
  readonly batchGrows?: boolean;
  /** Applies events in `$all` order. `db` is the open transaction, schema-scoped. */
  apply(db: Kysely<Database>, events: readonly RecordedEvent[]): Promise<void>;
}

export interface ProjectionStatus {
  readonly name: string;
  readonly version: number;
  /** Version that built the live tables (differs from `version` until a version-change rebuild swaps); null before the first start. */
  readonly liveVersion?: number | null;
  /** Position of the last applied event, or 'start'. */
  readonly position: string;
  /** Events in the log after the checkpoint. */
  readonly lagEvents: number;
  /** Age of the oldest unapplied event in seconds (0 when caught up). */
  readonly lagSeconds: number;
  /** `active` (this process writes), `standby` (another process holds the lock), `rebuilding`, `stopped`. */
  readonly state: 'active' | 'standby' | 'rebuilding' | 'stopped';
  readonly updatedAt: string | null;
}

export interface RebuildProgress {
  readonly name: string;
  readonly done: number;
  readonly total: number;
  readonly ratePerSecond: number;
  readonly etaSeconds: number | null;
}

export interface ProjectionRunner {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** `lagCap`: count the backlog up to this many events (status shows the cap when it is longer). */
  status(options?: { lagCap?: number }): Promise<ProjectionStatus[]>;
  /**
   * Read-your-writes: resolves once every projection (or the one named) has applied the given
   * position; rejects with a timeout error after `timeoutMs` (bounded wait, design.md "Read side").
   */
  waitFor(position: string, options?: { projection?: string; timeoutMs?: number }): Promise<void>;
  rebuild(name: string, onProgress?: (p: RebuildProgress) => void): Promise<void>;
}
