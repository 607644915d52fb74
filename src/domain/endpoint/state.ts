import type { EndpointEvent, EndpointSlugEvent } from './events.ts';

export interface EndpointFacts {
  readonly id: string;
  readonly slug: string;
  readonly agentId: string;
  readonly agentName: string;
  readonly operator: string;
  readonly queues: readonly string[];
  readonly verbs: readonly string[];
  readonly tokenHash: string;
  readonly webhookId: string;
  readonly replayTargets: readonly string[];
  readonly expiresAt: Date | null;
  readonly vendedAt: Date;
  /** The friend edge that minted it (release 0.5.0), else null. */
  readonly friendId: string | null;
  /** Whether the owner takes friend requests for it (off by default). */
  readonly acceptFriendRequests: boolean;
}

export type EndpointState =
  | { readonly status: 'none' }
  | ({ readonly status: 'active' } & EndpointFacts)
  | ({ readonly status: 'revoked'; readonly revokedAt: Date } & EndpointFacts);

export const initialEndpointState = (): EndpointState => ({ status: 'none' });

export function evolveEndpoint(state: EndpointState, event: EndpointEvent): EndpointState {
  switch (event.type) {
    case 'EndpointVended': {
      const d = event.data;
      return {
        status: 'active',
        id: d.endpoint_id,
        slug: d.slug,
        agentId: d.agent_id,
        agentName: d.agent_name,
        operator: d.operator,
        queues: d.queues,
        verbs: d.verbs,
        tokenHash: d.token_hash,
        webhookId: d.webhook_id,
        replayTargets: d.replay_targets,
        expiresAt: d.expires_at ? new Date(d.expires_at) : null,
        vendedAt: new Date(d.vended_at),
        friendId: d.friend_id ?? null,
        acceptFriendRequests: false,
      };
    }
    case 'EndpointNarrowed':
      if (state.status === 'none') return state;
      return { ...state, verbs: event.data.verbs };
    case 'EndpointFriendRequestsSet':
      if (state.status === 'none') return state;
      return { ...state, acceptFriendRequests: event.data.accept };
    case 'EndpointScopeChanged':
      if (state.status === 'none') return state;
      return { ...state, queues: event.data.queues, verbs: event.data.verbs };
    case 'EndpointRevoked':
      if (state.status === 'none') return state;
      return { ...state, status: 'revoked', revokedAt: new Date(event.data.revoked_at) };
    default: {
      const never: never = event;
      return never;
    }
  }
}

/** An endpoint past its `expires_at` works no more than a revoked one. */
export const isExpired = (state: EndpointFacts, now: Date): boolean =>
  state.expiresAt !== null && state.expiresAt.getTime() <= now.getTime();

/** The facts of an endpoint that exists, without its status. */
export function factsOf(state: Exclude<EndpointState, { status: 'none' }>): EndpointFacts {
  const { status: _status, ...facts } = state;
  return facts;
}

/** The endpoint that holds a slug: the first reservation. */
export type EndpointSlugState = { readonly endpointId: string | null };

export const initialEndpointSlugState = (): EndpointSlugState => ({ endpointId: null });

export function evolveEndpointSlug(state: EndpointSlugState, event: EndpointSlugEvent): EndpointSlugState {
  switch (event.type) {
    case 'EndpointSlugReserved':
      return { endpointId: state.endpointId ?? event.data.endpoint_id };
    default: {
      const never: never = event.type;
      return never;
    }
  }
}
