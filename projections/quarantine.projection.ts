import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { decodeEvent } from '../src/domain/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './engine/types.ts';
import { textSafe } from './pg-safe.ts';
import { createQuarantineTables } from './quarantine.table.ts';

export const quarantineProjection: Projection = {
  name: 'quarantine',
  version: 1,
  tables: ['quarantine'],
  createTables: createQuarantineTables,
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
        reason: textSafe(d.reason),
        message: textSafe(d.message),
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
