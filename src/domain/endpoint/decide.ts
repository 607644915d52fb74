import { DomainError } from '../errors.ts';
import { isGrantable } from '../friend/grant.ts';
import { MAX_QUEUES, QUARANTINE, QUEUE_PATTERN, QUEUE_RULE } from '../queue.ts';
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
  /** The queues it drains, 1 to 16; the first is where a webhook without a queue delivers. */
  readonly queues: readonly string[];
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

/**
 * The owner changes the queues an endpoint drains and narrows its verbs (PATCH /api/v1/endpoints
 * /{ref}). A removed queue must hold no live (pending or claimed) todo unless `moveTo` names one
 * of the remaining queues: the caller counts them (`liveTodos`, from the read model) and moves
 * them before appending the change.
 */
export interface ChangeEndpointScope {
  readonly type: 'ChangeEndpointScope';
  readonly operator: string;
  readonly human: string;
  readonly queues?: readonly string[] | undefined;
  readonly verbs?: readonly Verb[] | undefined;
  readonly moveTo?: string | null | undefined;
  /** Live todos per queue, as counted by the caller; a queue left out holds none. */
  readonly liveTodos: Readonly<Record<string, number>>;
}

export type EndpointCommand =
  | VendEndpoint
  | ChangeEndpointScope
  | NarrowEndpoint
  | SetFriendRequests
  | RevokeEndpoint;

/** 1 to 16 distinct queue names, none of them `quarantine` (field: `queues`). */
export function checkQueues(queues: readonly string[], field = 'queues'): void {
  if (queues.length === 0 || queues.length > MAX_QUEUES) {
    throw new DomainError('bad_request', `an endpoint drains 1 to ${MAX_QUEUES} queues`, { field });
  }
  for (const queue of queues) {
    if (!QUEUE_PATTERN.test(queue)) throw new DomainError('bad_request', QUEUE_RULE, { field });
    if (queue === QUARANTINE) {
      throw new DomainError(
        'bad_request',
        '`quarantine` is reserved for held deliveries and cannot be vended',
        { field },
      );
    }
  }
  const seen = new Set<string>();
  for (const queue of queues) {
    if (seen.has(queue)) throw new DomainError('bad_request', `queue ${queue} is named twice`, { field });
    seen.add(queue);
  }
}

/** The scope checks of a vend, run before anything is written (a refused vend mints nothing). */
export function checkVendScope(
  scope: {
    readonly queues: readonly string[];
    readonly verbs: readonly Verb[];
    readonly expiresAt: Date | null;
  },
  now: Date,
): void {
  checkQueues(scope.queues, scope.queues.length === 1 ? 'queue' : 'queues');
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
            queues: [...command.queues],
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
    case 'ChangeEndpointScope':
      return decideScopeChange(command, state, now);
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

function decideScopeChange(command: ChangeEndpointScope, state: EndpointState, now: Date): EndpointEvent[] {
  if (state.status === 'none' || state.operator !== command.operator) {
    throw new DomainError('not_found', 'no endpoint of yours has that slug or id');
  }
  if (state.status === 'revoked') throw new DomainError('endpoint_revoked', 'the endpoint is revoked');
  if (command.queues === undefined && command.verbs === undefined) {
    throw new DomainError('bad_request', 'name queues, verbs or both');
  }
  if (state.friendId !== null) {
    // Its queue and grant follow its friendship: narrow or revoke the friendship instead.
    throw new DomainError(
      'bad_request',
      `endpoint ${state.slug} was minted by a friendship (${state.friendId}); narrow or revoke the friendship instead`,
    );
  }
  const queues = command.queues ?? state.queues;
  checkQueues(queues);
  const verbs = command.verbs ?? (state.verbs as readonly Verb[]);
  if (verbs.length === 0) {
    throw new DomainError('bad_request', 'verbs must name at least one verb', { field: 'verbs' });
  }
  const added = verbs.filter((v) => !state.verbs.includes(v));
  if (added.length > 0) {
    throw new DomainError(
      'bad_request',
      `verbs may only narrow; this endpoint does not hold ${added.join(', ')} (vend a new endpoint for more)`,
      { field: 'verbs' },
    );
  }
  const removed = state.queues.filter((q) => !queues.includes(q));
  const moveTo = command.moveTo ?? null;
  if (moveTo !== null && !queues.includes(moveTo)) {
    throw new DomainError(
      'bad_request',
      `move_to must be one of the endpoint's queues (${queues.join(', ')})`,
      {
        field: 'move_to',
      },
    );
  }
  if (moveTo === null) {
    const held = removed.filter((q) => (command.liveTodos[q] ?? 0) > 0);
    if (held.length > 0) {
      const counts = held.map((q) => `${q} (${command.liveTodos[q]})`).join(', ');
      throw new DomainError(
        'conflict',
        `queue ${counts} still holds pending or claimed todos; pass move_to naming a queue to move them to`,
        { field: 'queues' },
      );
    }
  }
  const same = (a: readonly string[], b: readonly string[]) =>
    a.length === b.length && a.every((x, i) => x === b[i]);
  if (same(queues, state.queues) && same(verbs, state.verbs)) return [];
  return [
    {
      type: 'EndpointScopeChanged',
      data: {
        endpoint_id: state.id,
        queues: [...queues],
        verbs: [...verbs],
        removed_queues: removed,
        moved_to: removed.length > 0 ? moveTo : null,
        changed_by: command.human,
        changed_at: now.toISOString(),
      },
    },
  ];
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
