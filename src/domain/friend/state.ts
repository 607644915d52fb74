import type { FriendEvent } from './events.ts';

export type FriendStatus = 'pending' | 'approved' | 'declined' | 'revoked' | 'withdrawn' | 'expired';

export interface FriendRequester {
  readonly name: string;
  readonly description: string | null;
  readonly cardUrl: string | null;
  readonly endpointId: string | null;
  readonly operator: string | null;
}

export interface FriendGrant {
  readonly verbs: readonly string[];
  readonly friendEndpointId: string;
  readonly friendSlug: string;
  readonly approverQueue: string;
  readonly credentialSealed: string;
  readonly credentialCollected: boolean;
  readonly approvedAt: Date;
}

export interface FriendFacts {
  readonly id: string;
  readonly approverEndpointId: string;
  readonly approverSlug: string;
  readonly approverOperator: string;
  readonly requester: FriendRequester;
  readonly requestedVerbs: readonly string[];
  readonly queue: string;
  readonly message: string | null;
  readonly via: 'a2a' | 'local';
  readonly requestedAt: Date;
  readonly expiresAt: Date;
  /** Set from approval on (kept, narrowed, after a revocation). */
  readonly grant: FriendGrant | null;
  /** When the edge left `pending` or `approved`, and who moved it. */
  readonly endedAt: Date | null;
  readonly endedBy: string | null;
}

export type FriendState = { readonly status: 'none' } | ({ readonly status: FriendStatus } & FriendFacts);

export const initialFriendState = (): FriendState => ({ status: 'none' });

export function evolveFriend(state: FriendState, event: FriendEvent): FriendState {
  if (event.type === 'FriendRequested') {
    const d = event.data;
    return {
      status: 'pending',
      id: d.friend_id,
      approverEndpointId: d.approver_endpoint_id,
      approverSlug: d.approver_slug,
      approverOperator: d.approver_operator,
      requester: {
        name: d.requester.name,
        description: d.requester.description,
        cardUrl: d.requester.card_url,
        endpointId: d.requester.endpoint_id,
        operator: d.requester.operator,
      },
      requestedVerbs: d.requested_verbs,
      queue: d.queue,
      message: d.message,
      via: d.via,
      requestedAt: new Date(d.requested_at),
      expiresAt: new Date(d.expires_at),
      grant: null,
      endedAt: null,
      endedBy: null,
    };
  }
  if (state.status === 'none') return state;
  switch (event.type) {
    case 'FriendApproved': {
      const d = event.data;
      return {
        ...state,
        status: 'approved',
        grant: {
          verbs: d.granted_verbs,
          friendEndpointId: d.friend_endpoint_id,
          friendSlug: d.friend_slug,
          approverQueue: d.approver_queue,
          credentialSealed: d.credential_sealed,
          credentialCollected: false,
          approvedAt: new Date(d.approved_at),
        },
      };
    }
    case 'FriendNarrowed':
      return state.grant ? { ...state, grant: { ...state.grant, verbs: event.data.granted_verbs } } : state;
    case 'FriendCredentialCollected':
      return state.grant ? { ...state, grant: { ...state.grant, credentialCollected: true } } : state;
    case 'FriendDeclined':
      return ended(state, 'declined', event.data.declined_at, event.data.declined_by);
    case 'FriendRevoked':
      return ended(state, 'revoked', event.data.revoked_at, event.data.revoked_by);
    case 'FriendWithdrawn':
      return ended(state, 'withdrawn', event.data.withdrawn_at, event.data.withdrawn_by);
    case 'FriendExpired':
      return ended(state, 'expired', event.data.expired_at, null);
    default: {
      const never: never = event;
      return never;
    }
  }
}

function ended(
  state: { readonly status: FriendStatus } & FriendFacts,
  status: FriendStatus,
  at: string,
  by: string | null,
): FriendState {
  return { ...state, status, endedAt: new Date(at), endedBy: by };
}

/** A pending request past its expiry is expired, whether or not FriendExpired was recorded yet. */
export const effectiveStatus = (state: FriendState, now: Date): FriendStatus | 'none' =>
  state.status === 'pending' && state.expiresAt.getTime() <= now.getTime() ? 'expired' : state.status;
