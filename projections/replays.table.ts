import type { ColumnType, Kysely, Selectable } from 'kysely';

/**
 * One row per replay attempt of a delivery (the `ReplayAttempted` events of `replays-<event id>`),
 * what the detail page lists: where it went, what came back, how long it took, who asked.
 */
export interface ReplayAttemptsTable {
  event_id: ColumnType<bigint | number, number, number>;
  /** The attempt's revision on the delivery's replay stream (0 for the first). */
  attempt: number;
  target: string;
  outcome: string;
  status: number | null;
  location: string | null;
  reason: string | null;
  phase: string | null;
  detail: string | null;
  latency_ms: number;
  via: string;
  by: string;
  endpoint_id: string | null;
  attempted_at: ColumnType<Date, Date, Date>;
}

export interface ReplayTables {
  replay_attempts: ReplayAttemptsTable;
}

export type ReplayAttemptRow = Selectable<ReplayAttemptsTable>;

/** Creates the table and its key (a rebuild creates it afresh in its shadow schema). */
export async function createReplayTables(db: Pick<Kysely<unknown>, 'schema'>): Promise<void> {
  await db.schema
    .createTable('replay_attempts')
    .ifNotExists()
    .addColumn('event_id', 'bigint', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('status', 'integer')
    .addColumn('location', 'text')
    .addColumn('reason', 'text')
    .addColumn('phase', 'text')
    .addColumn('detail', 'text')
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('via', 'text', (c) => c.notNull())
    .addColumn('by', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text')
    .addColumn('attempted_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('replay_attempts_pkey', ['event_id', 'attempt'])
    .execute();
}
