import type { Clock } from '../../clock.ts';
import { jsonEvent } from '../../eventstore/codec.ts';
import type { AppendResult, EventStore } from '../../eventstore/port.ts';
import type { DoorbellEvent } from './events.ts';
import { doorbellStream } from './state.ts';

/**
 * Rings an endpoint's doorbell: a todo landed on one of its queues (spec 3, push todo). Every
 * path that mints a todo rings it; the MCP server turns it into a notification for connected
 * agents. A ring is a fact, not a decision, so it appends without an expected revision.
 */
export function ringDoorbell(
  deps: { readonly store: EventStore; readonly clock: Clock },
  ring: {
    readonly endpointId: string;
    readonly queue: string;
    readonly todoId: string;
    readonly eventId: number;
  },
): Promise<AppendResult> {
  const event: DoorbellEvent = {
    type: 'DoorbellRung',
    data: {
      endpoint_id: ring.endpointId,
      queue: ring.queue,
      todo_id: ring.todoId,
      event_id: ring.eventId,
      rung_at: deps.clock.now().toISOString(),
    },
  };
  return deps.store.append(doorbellStream(ring.endpointId), [jsonEvent(event.type, event.data)]);
}
