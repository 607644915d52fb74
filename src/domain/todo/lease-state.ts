import type { DrainEvent } from './lease-events.ts';
import type { TodoState } from './state.ts';

/** The claim a todo is under: who holds it (by lease id) and until when. */
export interface Lease {
  readonly id: string;
  readonly endpointId: string;
  readonly sessionId: string | null;
  readonly claimedAt: Date;
  readonly expiresAt: Date;
}

/** The drain moves folded onto a todo (README "Todo lifecycle"). */
export function evolveDrain(state: TodoState, event: DrainEvent): TodoState {
  if (state.status === 'none') return state;
  switch (event.type) {
    case 'TodoClaimed': {
      const d = event.data;
      return {
        ...state,
        status: 'claimed',
        lease: {
          id: d.lease_id,
          endpointId: d.endpoint_id,
          sessionId: d.session_id,
          claimedAt: new Date(d.claimed_at),
          expiresAt: new Date(d.lease_expires_at),
        },
      };
    }
    case 'TodoLeaseExtended':
      if (!state.lease) return state;
      return { ...state, lease: { ...state.lease, expiresAt: new Date(event.data.lease_expires_at) } };
    case 'TodoReleased':
    case 'TodoLeaseExpired':
      return { ...state, status: 'pending', lease: null };
    case 'TodoCompleted':
      return { ...state, status: 'completed', lease: null, endedAt: new Date(event.data.completed_at) };
    case 'TodoFailed': {
      const d = event.data;
      return {
        ...state,
        status: d.final ? 'failed' : 'pending',
        lease: null,
        attempts: d.attempt,
        lastFailure: d.reason,
        endedAt: d.final ? new Date(d.failed_at) : null,
      };
    }
    default: {
      const never: never = event;
      return never;
    }
  }
}
