import { z } from 'zod';
import { defineEvent } from '../shared.ts';

/**
 * The prune job records each cycle as one event on its own stream, so every instance's settings
 * screen shows when retention last ran and what it removed, and the log read model applies the
 * prune itself (a rebuild gives the rows the live log has). The stream keeps only its newest
 * events (it truncates itself), so the record never grows without bound.
 */
export const RETENTION_STREAM = 'retention';
export const RETENTION_EVENTS_KEPT = 100;

export const RetentionRan = defineEvent(
  'RetentionRan',
  z.object({
    ran_at: z.string(),
    /** The settings in force for this cycle. */
    max_age_days: z.number().int(),
    max_rows: z.number().int(),
    /** Deliveries with an id below this were truncated from the log this cycle; null when none. */
    truncated_before_id: z.number().int().nullable(),
    /** Events removed from the `deliveries` stream this cycle. */
    removed_events: z.number().int(),
    /** Rows removed from the log read model this cycle. */
    removed_rows: z.number().int(),
    /**
     * The log keeps no delivery with an id below this (null: none pruned yet). The log projection
     * applies it, so a rebuild gives the rows the live log has even while the store still returns
     * truncated deliveries (EventStoreDB until a scavenge). Absent from events before it existed.
     */
    log_before_id: z.number().int().nullable().optional(),
    duration_ms: z.number(),
  }),
);

export type RetentionEvent = z.infer<typeof RetentionRan>;
export type RetentionRanData = RetentionEvent['data'];
