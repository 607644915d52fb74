import { type EndpointState, isExpired } from '../endpoint/state.ts';
import { DomainError } from '../errors.ts';
import { QUARANTINE } from '../queue.ts';
import type { Decider } from '../shared.ts';
import type { TodoState } from '../todo/state.ts';
import { QUARANTINE_EVENT_TYPES, type QuarantineEvent } from './events.ts';
import { evolveRelease, initialReleaseState, type ReleaseState } from './state.ts';

export interface ReleaseHeld {
  readonly type: 'ReleaseHeld';
  readonly heldTodoId: string;
  /** The todo the release becomes (minted by the caller; a repeated release keeps the first). */
  readonly todoId: string;
  readonly queue: string;
  readonly operator: string;
  readonly human: string;
  /** The held todo and its endpoint, as read before deciding. */
  readonly held: TodoState;
  readonly endpoint: EndpointState;
}

/**
 * A release hands a held delivery to one of its endpoint's queues as a new todo. Only the owner
 * may release (anyone else hears not_found), only onto a queue the active endpoint drains, and
 * only once: releasing again to the same queue changes nothing (the caller completes what an
 * interrupted release left), to another queue is a conflict.
 */
export function decideRelease(command: ReleaseHeld, state: ReleaseState, now: Date): QuarantineEvent[] {
  const { held, endpoint } = command;
  if (held.status === 'none' || held.operator !== command.operator || held.queue !== QUARANTINE) {
    throw new DomainError('not_found', 'no held delivery of yours has that todo id');
  }
  if (endpoint.status !== 'active' || isExpired(endpoint, now)) {
    throw new DomainError('endpoint_revoked', `endpoint ${held.slug} is no longer active`);
  }
  if (command.queue === QUARANTINE || !endpoint.queues.includes(command.queue)) {
    throw new DomainError(
      'bad_request',
      `queue ${JSON.stringify(command.queue)} is not one of the endpoint's queues (${endpoint.queues.filter((q) => q !== QUARANTINE).join(', ')})`,
      { field: 'queue' },
    );
  }
  const released = state.release;
  if (released) {
    if (released.queue !== command.queue) {
      throw new DomainError('conflict', `already released to ${released.queue} as ${released.todo_id}`, {
        todo_id: released.todo_id,
        queue: released.queue,
      });
    }
    return [];
  }
  return [
    {
      type: 'QuarantineReleased',
      data: {
        held_todo_id: command.heldTodoId,
        todo_id: command.todoId,
        queue: command.queue,
        endpoint_id: endpoint.id,
        operator: endpoint.operator,
        event_id: held.eventId,
        released_by: command.human,
        released_at: now.toISOString(),
      },
    },
  ];
}

export const releaseDecider: Decider<ReleaseHeld, ReleaseState, QuarantineEvent> = {
  initialState: initialReleaseState,
  evolve: evolveRelease,
  decide: decideRelease,
  eventTypes: QUARANTINE_EVENT_TYPES,
};
