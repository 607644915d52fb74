import { DomainError } from '../errors.ts';
import { isGrantable } from '../friend/grant.ts';
import { QUARANTINE, QUEUE_PATTERN, QUEUE_RULE } from '../queue.ts';
import type { Decider } from '../shared.ts';
import {
  ENDPOINT_EVENT_TYPES,
  ENDPOINT_SLUG_EVENT_TYPES,
  type EndpointEvent,
  type EndpointSlugEvent,
} from './events.ts';
import {
  type EndpointSlugState,
  type EndpointState,
  evolveEndpoint,
  evolveEndpointSlug,
  initialEndpointSlugState,
  initialEndpointState,
} from './state.ts';
import type { Verb } from './verbs.ts';

export interface VendEndpoint {
  readonly type: 'VendEndpoint';
  readonly endpointId: string;
  readonly slug: string;
  readonly agentId: string;
  readonly agentName: string;
  readonly operator: string;
  readonly human: string;
  readonly queue: string;
  readonly verbs: readonly Verb[];
  readonly tokenHash: string;
  readonly webhookId: string;
  readonly replayTargets: readonly string[];
  readonly expiresAt: Date | null;
  /** Release 0.5.0: the friend edge approving which mints this endpoint; its verbs must be grantable. */
  readonly friendId?: string;
}

/**
 * Narrows the verb allowlist in place: the new verbs are a non-empty subset of the current ones.
 * Nothing ever widens an endpoint's verbs after its vend.
 */
export interface NarrowEndpoint {
  readonly type: 'NarrowEndpoint';
  readonly operator: string;
  readonly human: string;
  readonly verbs: readonly string[];
}

/** Release 0.5.0: take friend requests for the endpoint (publish its Agent Card), or stop. */
export interface SetFriendRequests {
  readonly type: 'SetFriendRequests';
  readonly operator: string;
  readonly human: string;
  readonly accept: boolean;
}

/**
 * Only the owner may revoke; anyone else hears "not found", as for an unknown endpoint (spec
 * 4.13's rule, applied to every operation on `{ref}`). Revoking twice changes nothing.
 */
export interface RevokeEndpoint {
  readonly type: 'RevokeEndpoint';
  readonly operator: string;
  readonly human: string;
}

export type EndpointCommand = VendEndpoint | NarrowEndpoint | SetFriendRequests | RevokeEndpoint;

/** The scope checks of a vend, run before anything is written (a refused vend mints nothing). */
export function checkVendScope(
  scope: { readonly queue: string; readonly verbs: readonly Verb[]; readonly expiresAt: Date | null },
  now: Date,
): void {
  if (!QUEUE_PATTERN.test(scope.queue)) {
    throw new DomainError('bad_request', QUEUE_RULE, { field: 'queue' });
  }
  if (scope.queue === QUARANTINE) {
    throw new DomainError(
      'bad_request',
      '`quarantine` is reserved for held deliveries and cannot be vended',
      {
        field: 'queue',
      },
    );
  }
  if (scope.verbs.length === 0) {
    throw new DomainError('bad_request', 'verbs must name at least one verb', { field: 'verbs' });
  }
  if (scope.expiresAt && scope.expiresAt.getTime() <= now.getTime()) {
    throw new DomainError('bad_request', 'expires_at must be in the future', { field: 'expires_at' });
  }
}

export function decideEndpoint(command: EndpointCommand, state: EndpointState, now: Date): EndpointEvent[] {
  switch (command.type) {
    case 'VendEndpoint': {
      if (state.status !== 'none') throw new DomainError('conflict', `endpoint ${command.endpointId} exists`);
      checkVendScope(command, now);
      if (command.friendId !== undefined) {
        const outside = command.verbs.filter((v) => !isGrantable(v));
        if (outside.length > 0) {
          throw new DomainError('bad_request', `a friend endpoint cannot hold ${outside.join(', ')}`, {
            field: 'verbs',
          });
        }
      }
      return [
        {
          type: 'EndpointVended',
          data: {
            endpoint_id: command.endpointId,
            slug: command.slug,
            agent_id: command.agentId,
            agent_name: command.agentName,
            operator: command.operator,
            queues: [command.queue],
            verbs: [...command.verbs],
            token_hash: command.tokenHash,
            webhook_id: command.webhookId,
            replay_targets: [...command.replayTargets],
            expires_at: command.expiresAt ? command.expiresAt.toISOString() : null,
            vended_by: command.human,
            vended_at: now.toISOString(),
            ...(command.friendId !== undefined ? { friend_id: command.friendId } : {}),
          },
        },
      ];
    }
    case 'NarrowEndpoint': {
      if (state.status === 'none' || state.operator !== command.operator) {
        throw new DomainError('not_found', 'no endpoint of yours has that slug or id');
      }
      if (state.status === 'revoked')
        throw new DomainError('endpoint_revoked', `endpoint ${state.slug} is revoked`);
      if (command.verbs.length === 0) {
        throw new DomainError('bad_request', 'an endpoint must keep at least one verb', { field: 'verbs' });
      }
      const wider = command.verbs.filter((v) => !state.verbs.includes(v));
      if (wider.length > 0) {
        throw new DomainError('bad_request', `narrowing cannot add ${wider.join(', ')}`, { field: 'verbs' });
      }
      const verbs = state.verbs.filter((v) => command.verbs.includes(v));
      if (verbs.length === state.verbs.length) return [];
      return [
        {
          type: 'EndpointNarrowed',
          data: { endpoint_id: state.id, verbs, narrowed_by: command.human, narrowed_at: now.toISOString() },
        },
      ];
    }
    case 'SetFriendRequests': {
      if (state.status === 'none' || state.operator !== command.operator) {
        throw new DomainError('not_found', 'no endpoint of yours has that slug or id');
      }
      if (state.status === 'revoked')
        throw new DomainError('endpoint_revoked', `endpoint ${state.slug} is revoked`);
      if (state.friendId !== null && command.accept) {
        throw new DomainError('bad_request', 'a friend endpoint cannot take friend requests of its own');
      }
      if (state.acceptFriendRequests === command.accept) return [];
      return [
        {
          type: 'EndpointFriendRequestsSet',
          data: {
            endpoint_id: state.id,
            accept: command.accept,
            set_by: command.human,
            set_at: now.toISOString(),
          },
        },
      ];
    }
    case 'RevokeEndpoint': {
      if (state.status === 'none' || state.operator !== command.operator) {
        throw new DomainError('not_found', 'no endpoint of yours has that slug or id');
      }
      if (state.status === 'revoked') return [];
      return [
        {
          type: 'EndpointRevoked',
          data: { endpoint_id: state.id, revoked_by: command.human, revoked_at: now.toISOString() },
        },
      ];
    }
    default: {
      const never: never = command;
      return never;
    }
  }
}

export const endpointDecider: Decider<EndpointCommand, EndpointState, EndpointEvent> = {
  initialState: initialEndpointState,
  evolve: evolveEndpoint,
  decide: decideEndpoint,
  eventTypes: ENDPOINT_EVENT_TYPES,
};

export interface ReserveSlug {
  readonly type: 'ReserveSlug';
  readonly endpointId: string;
  readonly slug: string;
}

/** A slug is held by its first reservation; a taken one is a conflict (the caller draws again). */
export function decideEndpointSlug(command: ReserveSlug, state: EndpointSlugState): EndpointSlugEvent[] {
  if (state.endpointId !== null) throw new DomainError('conflict', `slug ${command.slug} is taken`);
  return [{ type: 'EndpointSlugReserved', data: { endpoint_id: command.endpointId, slug: command.slug } }];
}

export const endpointSlugDecider: Decider<ReserveSlug, EndpointSlugState, EndpointSlugEvent> = {
  initialState: initialEndpointSlugState,
  evolve: evolveEndpointSlug,
  decide: decideEndpointSlug,
  eventTypes: ENDPOINT_SLUG_EVENT_TYPES,
};
