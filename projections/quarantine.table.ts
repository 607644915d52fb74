import type { ColumnType, Kysely, Selectable } from 'kysely';

/**
 * One row per delivery held in an owner's `quarantine` queue (a rule's quarantine action, or a
 * fault), with why, for the operator (GET /api/v1/quarantine); a release fills the released_*
 * columns. Agents never read this table.
 */
export interface QuarantineTable {
  /** The held todo (in `quarantine`). */
  todo_id: string;
  event_id: ColumnType<bigint | number, number, number>;
  webhook_id: string;
  endpoint_id: string;
  operator: string;
  disposition: string;
  reason: string | null;
  message: string | null;
  rule_id: string | null;
  rule_index: number | null;
  rules_version: number;
  held_at: ColumnType<Date, Date, Date>;
  released_queue: string | null;
  released_todo_id: string | null;
  released_by: string | null;
  released_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface QuarantineTables {
  quarantine: QuarantineTable;
}

export type QuarantineRow = Selectable<QuarantineTable>;

/** Creates the tables and their indexes (a rebuild creates them afresh in its shadow schema). */
export async function createQuarantineTables(db: Pick<Kysely<unknown>, 'schema'>): Promise<void> {
  await db.schema
    .createTable('quarantine')
    .ifNotExists()
    .addColumn('todo_id', 'text', (c) => c.primaryKey())
    .addColumn('event_id', 'bigint', (c) => c.notNull())
    .addColumn('webhook_id', 'text', (c) => c.notNull())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('operator', 'text', (c) => c.notNull())
    .addColumn('disposition', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('message', 'text')
    .addColumn('rule_id', 'text')
    .addColumn('rule_index', 'integer')
    .addColumn('rules_version', 'integer', (c) => c.notNull())
    .addColumn('held_at', 'timestamptz', (c) => c.notNull())
    .addColumn('released_queue', 'text')
    .addColumn('released_todo_id', 'text')
    .addColumn('released_by', 'text')
    .addColumn('released_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('quarantine_operator_idx')
    .ifNotExists()
    .on('quarantine')
    .columns(['operator', 'held_at desc'])
    .execute();
}
