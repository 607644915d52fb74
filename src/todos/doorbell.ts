import { appendEvents, type CommandDeps } from '../commands/handle-command.ts';
import { doorbellStream } from '../domain/endpoint/events.ts';
import type { DomainEvent } from '../domain/events.ts';
import type { AppendResult } from '../eventstore/port.ts';

export interface Ring {
  readonly endpointId: string;
  readonly queue: string;
  readonly todoId: string;
  readonly eventId: number;
}

/** The ring as an event of the endpoint's doorbell stream. */
export function doorbellRung(ring: Ring, now: Date): Extract<DomainEvent, { type: 'DoorbellRung' }> {
  return {
    type: 'DoorbellRung',
    data: {
      endpoint_id: ring.endpointId,
      queue: ring.queue,
      todo_id: ring.todoId,
      event_id: ring.eventId,
      rung_at: now.toISOString(),
    },
  };
}

/**
 * Rings an endpoint's doorbell: a todo landed on one of its queues (spec 3, push todo). Every
 * path that mints a todo rings it; the MCP server turns it into a notification for connected
 * agents. A ring is a fact, not a decision, so it appends without an expected revision. A todo
 * handed off with its delivery rings in the same append instead (hand-off.ts).
 */
export function ringDoorbell(deps: CommandDeps, ring: Ring): Promise<AppendResult> {
  return appendEvents(deps.store, doorbellStream(ring.endpointId), [doorbellRung(ring, deps.clock.now())]);
}
