import type { ColumnType, Kysely, Selectable } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { decodeEvent } from '../src/domain/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './types.ts';

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

export const quarantineProjection: Projection = {
  name: 'quarantine',
  version: 1,
  tables: ['quarantine'],
  async createTables(db) {
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
  },
  handles: (e) =>
    (e.type === 'DeliveryDisposed' && e.streamId.startsWith('dispositions-')) ||
    (e.type === 'QuarantineReleased' && e.streamId.startsWith('quarantine-release-')),
  async apply(db, events) {
    for (const e of events) await applyOne(db, e);
  },
};

async function applyOne(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  const event = decodeEvent(e);
  if (event.type === 'DeliveryDisposed') {
    const d = event.data;
    if ((d.disposition !== 'held' && d.disposition !== 'faulted') || d.todo_id === null) return;
    await db
      .insertInto('quarantine')
      .values({
        todo_id: d.todo_id,
        event_id: d.event_id,
        webhook_id: d.webhook_id,
        endpoint_id: d.endpoint_id,
        operator: d.operator,
        disposition: d.disposition,
        reason: d.reason,
        message: d.message,
        rule_id: d.rule?.id ?? null,
        rule_index: d.rule?.index ?? null,
        rules_version: d.rules_version,
        held_at: new Date(d.disposed_at),
        released_queue: null,
        released_todo_id: null,
        released_by: null,
      })
      .onConflict((oc) => oc.column('todo_id').doNothing())
      .execute();
  } else if (event.type === 'QuarantineReleased') {
    const d = event.data;
    await db
      .updateTable('quarantine')
      .set({
        released_queue: d.queue,
        released_todo_id: d.todo_id,
        released_by: d.released_by,
        released_at: new Date(d.released_at),
      })
      .where('todo_id', '=', d.held_todo_id)
      .execute();
  }
}

/** The operator's held deliveries, newest first; `released` false: only those still held. */
export function listQuarantine(
  db: Kysely<Database>,
  operator: string,
  options: { readonly released?: boolean; readonly limit?: number } = {},
): Promise<QuarantineRow[]> {
  let q = db.selectFrom('quarantine').selectAll().where('operator', '=', operator);
  if (options.released === false) q = q.where('released_at', 'is', null);
  return q
    .orderBy('held_at', 'desc')
    .limit(options.limit ?? 100)
    .execute();
}
