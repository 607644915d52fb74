import { appendEvents, type CommandDeps } from '../commands/handle-command.ts';
import { doorbellStream } from '../domain/endpoint/events.ts';
import type { AppendResult } from '../eventstore/port.ts';

/**
 * Rings an endpoint's doorbell: a todo landed on one of its queues (spec 3, push todo). Every
 * path that mints a todo rings it; the MCP server turns it into a notification for connected
 * agents. A ring is a fact, not a decision, so it appends without an expected revision.
 */
export function ringDoorbell(
  deps: CommandDeps,
  ring: {
    readonly endpointId: string;
    readonly queue: string;
    readonly todoId: string;
    readonly eventId: number;
  },
): Promise<AppendResult> {
  return appendEvents(deps.store, doorbellStream(ring.endpointId), [
    {
      type: 'DoorbellRung',
      data: {
        endpoint_id: ring.endpointId,
        queue: ring.queue,
        todo_id: ring.todoId,
        event_id: ring.eventId,
        rung_at: deps.clock.now().toISOString(),
      },
    },
  ]);
}
