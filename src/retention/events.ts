/**
 * The prune job records each cycle as one event on its own stream, so every instance's settings
 * screen shows when retention last ran and what it removed. The stream keeps only its newest
 * events (it truncates itself), so the record never grows without bound.
 */
export const RETENTION_STREAM = 'retention';
export const RETENTION_EVENTS_KEPT = 100;

export interface RetentionRan {
  readonly type: 'RetentionRan';
  readonly data: {
    readonly ran_at: string;
    /** The settings in force for this cycle. */
    readonly max_age_days: number;
    readonly max_rows: number;
    /** Deliveries with an id below this were truncated from the log this cycle; null when none. */
    readonly truncated_before_id: number | null;
    /** Events removed from the `deliveries` stream this cycle. */
    readonly removed_events: number;
    /** Rows removed from the log read model this cycle. */
    readonly removed_rows: number;
    /**
     * The log keeps no delivery with an id below this (null: none pruned yet). The log projection
     * applies it, so a rebuild gives the rows the live log has even while the store still returns
     * truncated deliveries (EventStoreDB until a scavenge). Absent from events before it existed.
     */
    readonly log_before_id?: number | null;
    readonly duration_ms: number;
  };
}

export type RetentionEvent = RetentionRan;
