import type { Kysely, Updateable } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { decodeOneOf, isOneOfTypes } from '../src/domain/events.ts';
import { type DrainEvent, TODO_EVENT_TYPES } from '../src/domain/todo/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './engine/types.ts';
import { jsonbSafe, textSafe } from './pg-safe.ts';
import { createTodoTables, type TodosTable } from './todos.table.ts';

export const todosProjection: Projection = {
  name: 'todos',
  // 3: payload_json, the payload that jsonb refuses (a NUL character).
  version: 3,
  tables: ['todos'],
  createTables: createTodoTables,
  handles: (e) => e.streamId.startsWith('todo-') && isOneOfTypes(TODO_EVENT_TYPES, e.type),
  async apply(db, events) {
    for (const e of events) await applyTodoEvent(db, e);
  },
};

async function applyTodoEvent(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  const event = decodeOneOf(e, TODO_EVENT_TYPES);
  switch (event.type) {
    case 'TodoCreated': {
      const d = event.data;
      const at = new Date(d.created_at);
      const payload = jsonbSafe(d.payload);
      await db
        .insertInto('todos')
        .values({
          id: d.todo_id,
          endpoint_id: d.endpoint_id,
          slug: d.slug,
          operator: d.operator,
          queue: d.queue,
          kind: d.kind,
          title: textSafe(d.title),
          payload: payload.jsonb,
          payload_json: payload.bytes,
          key: textSafe(d.key),
          state: 'pending',
          source: d.source,
          event_id: d.event_id,
          created_by: d.created_by,
          created_at: at,
          updated_at: at,
          claimed_by: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      return;
    }
    case 'TodoMoved':
      await db
        .updateTable('todos')
        .set({ queue: event.data.to_queue, updated_at: new Date(event.data.moved_at) })
        .where('id', '=', event.data.todo_id)
        .execute();
      return;
    default:
      await applyDrainEvent(db, event);
  }
}

/** The drain moves (src/domain/todo/events.ts): state, lease holder and expiry, end. */
async function applyDrainEvent(db: Kysely<Database>, event: DrainEvent): Promise<void> {
  const update = (id: string, at: string, set: Updateable<TodosTable>) =>
    db
      .updateTable('todos')
      .set({ ...set, updated_at: new Date(at) })
      .where('id', '=', id)
      .execute();
  switch (event.type) {
    case 'TodoClaimed': {
      const d = event.data;
      await update(d.todo_id, d.claimed_at, {
        state: 'claimed',
        claimed_by: d.lease_id,
        holder_session: d.session_id,
        lease_expires_at: new Date(d.lease_expires_at),
      });
      return;
    }
    case 'TodoLeaseExtended':
      await update(event.data.todo_id, event.data.extended_at, {
        lease_expires_at: new Date(event.data.lease_expires_at),
      });
      return;
    case 'TodoReleased':
      await update(event.data.todo_id, event.data.released_at, {
        state: 'pending',
        claimed_by: null,
        holder_session: null,
        lease_expires_at: null,
      });
      return;
    case 'TodoLeaseExpired':
      await update(event.data.todo_id, event.data.expired_at, {
        state: 'pending',
        claimed_by: null,
        holder_session: null,
        lease_expires_at: null,
      });
      return;
    case 'TodoCompleted':
      await update(event.data.todo_id, event.data.completed_at, {
        state: 'completed',
        claimed_by: null,
        holder_session: null,
        lease_expires_at: null,
        ended_at: new Date(event.data.completed_at),
      });
      return;
    case 'TodoFailed': {
      const d = event.data;
      await update(d.todo_id, d.failed_at, {
        state: d.final ? 'failed' : 'pending',
        claimed_by: null,
        holder_session: null,
        lease_expires_at: null,
        ended_at: d.final ? new Date(d.failed_at) : null,
        attempts: d.attempt,
        last_error: textSafe(d.reason),
      });
      return;
    }
    default: {
      const never: never = event;
      return never;
    }
  }
}
