import { z } from 'zod';
import { defineEvent, typesOf } from '../shared.ts';

/**
 * Releasing a held delivery (docs/guides/writing-rules.md, "Quarantine"). The held todo is never moved or edited: it
 * stays in `quarantine` as the record of what was held and why. A release is a reservation
 * `quarantine-release-<held todo id>` appended with `no_stream`, so a held todo is released at
 * most once, naming the todo it becomes.
 */
export const releaseStream = (heldTodoId: string): string => `quarantine-release-${heldTodoId}`;

export const QuarantineReleased = defineEvent(
  'QuarantineReleased',
  z.object({
    held_todo_id: z.string(),
    todo_id: z.string(),
    queue: z.string(),
    endpoint_id: z.string(),
    operator: z.string(),
    event_id: z.number(),
    released_by: z.string(),
    released_at: z.string(),
  }),
);

export const quarantineEvents = [QuarantineReleased] as const;
export type QuarantineEvent = z.infer<typeof QuarantineReleased>;
export type QuarantineReleasedData = QuarantineEvent['data'];
export const QUARANTINE_EVENT_TYPES = typesOf(quarantineEvents);
