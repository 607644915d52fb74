/**
 * The drain moves of a todo (README "Todo lifecycle"), on the todo's own stream `todo-<id>`,
 * each appended with the revision its decision read, so of two agents racing for the same move
 * exactly one wins. A claim hands out a lease (`lease_id`, random, known only to the claimer);
 * every later move of that claim names the lease, so a stale holder cannot touch a todo that
 * has since been claimed again.
 */
export type DrainEvent =
  | {
      readonly type: 'TodoClaimed';
      readonly data: {
        readonly todo_id: string;
        readonly endpoint_id: string;
        readonly lease_id: string;
        /** The MCP session that claimed, for the operator's eyes; the lease id is what counts. */
        readonly session_id: string | null;
        readonly claimed_at: string;
        readonly lease_expires_at: string;
      };
    }
  | {
      /** A heartbeat: the holder is alive, the lease runs until the new expiry. */
      readonly type: 'TodoLeaseExtended';
      readonly data: {
        readonly todo_id: string;
        readonly lease_id: string;
        readonly extended_at: string;
        readonly lease_expires_at: string;
      };
    }
  | {
      /** The holder gave the todo back unfinished: pending again, no attempt counted. */
      readonly type: 'TodoReleased';
      readonly data: {
        readonly todo_id: string;
        readonly lease_id: string;
        readonly released_at: string;
        readonly reason: string | null;
      };
    }
  | {
      /** Nobody heartbeat in time (the expiry job, or a claim finding the lease run out): pending again. */
      readonly type: 'TodoLeaseExpired';
      readonly data: {
        readonly todo_id: string;
        readonly lease_id: string;
        readonly lease_expires_at: string;
        readonly expired_at: string;
      };
    }
  | {
      readonly type: 'TodoCompleted';
      readonly data: {
        readonly todo_id: string;
        readonly lease_id: string;
        readonly completed_at: string;
        /** What the agent reported, kept as given (at most 16 KiB of JSON). */
        readonly result: unknown;
      };
    }
  | {
      /**
       * A failed attempt. `final` false: retryable and attempts remain, so the todo is pending
       * again; `final` true: failed for good.
       */
      readonly type: 'TodoFailed';
      readonly data: {
        readonly todo_id: string;
        readonly lease_id: string;
        readonly failed_at: string;
        readonly reason: string;
        readonly retryable: boolean;
        /** Failed attempts so far, this one included. */
        readonly attempt: number;
        readonly max_attempts: number;
        readonly final: boolean;
      };
    };

export const DRAIN_EVENT_TYPES: readonly DrainEvent['type'][] = [
  'TodoClaimed',
  'TodoLeaseExtended',
  'TodoReleased',
  'TodoLeaseExpired',
  'TodoCompleted',
  'TodoFailed',
];
