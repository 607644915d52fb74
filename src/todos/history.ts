import { decodeOneOf } from '../domain/events.ts';
import { TODO_EVENT_TYPES, type TodoEvent, todoStream } from '../domain/todo/events.ts';
import { type EventStore, StreamNotFoundError } from '../eventstore/port.ts';

/** A todo's audit trail: its own stream's events as recorded, decoded; none when it has no stream. */
export async function readTodoHistory(store: EventStore, todoId: string): Promise<TodoEvent[]> {
  const events: TodoEvent[] = [];
  try {
    for await (const e of store.readStream(todoStream(todoId))) events.push(decodeOneOf(e, TODO_EVENT_TYPES));
  } catch (err) {
    if (!(err instanceof StreamNotFoundError)) throw err;
  }
  return events;
}
