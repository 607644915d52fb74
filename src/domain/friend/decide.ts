import { DomainError } from '../errors.ts';
import { QUARANTINE, QUEUE_PATTERN, QUEUE_RULE } from '../queue.ts';
import type { Decider } from '../shared.ts';
import { FRIEND_EVENT_TYPES, type FriendEvent } from './events.ts';
import { FRIEND_GRANTABLE, grantableOf, isGrantable } from './grant.ts';
import { effectiveStatus, evolveFriend, type FriendState, initialFriendState } from './state.ts';

/** Who acts on an edge: an operator (the approver's owner, or a local requester's) or the A2A task holder. */
export type FriendActor =
  | { readonly kind: 'operator'; readonly operator: string; readonly human: string }
  | { readonly kind: 'task'; readonly label: string };

export interface RequestFriend {
  readonly type: 'RequestFriend';
  readonly friendId: string;
  readonly approver: {
    readonly endpointId: string;
    readonly slug: string;
    readonly operator: string;
    readonly active: boolean;
  };
  readonly requester: {
    readonly name: string;
    readonly description: string | null;
    readonly cardUrl: string | null;
    readonly endpointId: string | null;
    readonly operator: string | null;
  };
  readonly verbs: readonly string[];
  readonly queue: string;
  readonly message: string | null;
  readonly via: 'a2a' | 'local';
  readonly sourceIp: string | null;
  readonly by: string;
  readonly ttlMs: number;
}

export interface ApproveFriend {
  readonly type: 'ApproveFriend';
  readonly operator: string;
  readonly human: string;
  readonly verbs: readonly string[];
  readonly friendEndpointId: string;
  readonly friendSlug: string;
  readonly approverQueue: string;
  readonly credentialSealed: string;
}

export interface DeclineFriend {
  readonly type: 'DeclineFriend';
  readonly operator: string;
  readonly human: string;
}

export interface NarrowFriend {
  readonly type: 'NarrowFriend';
  readonly operator: string;
  readonly human: string;
  readonly verbs: readonly string[];
}

export interface RevokeFriend {
  readonly type: 'RevokeFriend';
  readonly operator: string;
  readonly human: string;
}

export interface WithdrawFriend {
  readonly type: 'WithdrawFriend';
  readonly actor: FriendActor;
}

/**
 * Records that a pending request outlived its expiry (the sweep, or a move refused as expired).
 * Nothing when the request is no longer pending or not yet due, so any number may race.
 */
export interface ExpireFriend {
  readonly type: 'ExpireFriend';
}

export interface CollectFriendCredential {
  readonly type: 'CollectFriendCredential';
  readonly actor: FriendActor;
}

export type FriendCommand =
  | RequestFriend
  | ApproveFriend
  | DeclineFriend
  | NarrowFriend
  | RevokeFriend
  | WithdrawFriend
  | ExpireFriend
  | CollectFriendCredential;

const NOT_FOUND = 'no friend request of yours has that id';
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
const ONE_LINE = /^[^\u0000-\u001f\u007f]*$/;

function text(value: string | null, field: string, max: number, oneLine: boolean): void {
  if (value === null) return;
  if (value.length > max)
    throw new DomainError('bad_request', `${field} must be at most ${max} characters`, { field });
  // PostgreSQL text refuses NUL; a multi-line text may hold other control characters.
  if (value.includes('\u0000'))
    throw new DomainError('bad_request', `${field} must not contain a NUL character`, { field });
  if (oneLine && !ONE_LINE.test(value)) {
    throw new DomainError('bad_request', `${field} must be one line without control characters`, { field });
  }
}

/** The checks of a request, before anything is written: a refused request is not stored (spec 7). */
export function checkFriendRequest(command: Omit<RequestFriend, 'type' | 'friendId'>): void {
  const { requester } = command;
  if (requester.name.trim().length === 0) {
    throw new DomainError('bad_request', 'the requester needs a name', { field: 'name' });
  }
  text(requester.name, 'name', 100, true);
  text(requester.description, 'description', 1000, false);
  text(command.message, 'message', 2000, false);
  text(requester.cardUrl, 'card_url', 2048, true);
  if (requester.cardUrl !== null && !/^https?:\/\/\S+$/i.test(requester.cardUrl)) {
    throw new DomainError('bad_request', 'card_url must be an http(s) URL', { field: 'card_url' });
  }
  if (!QUEUE_PATTERN.test(command.queue))
    throw new DomainError('bad_request', QUEUE_RULE, { field: 'queue' });
  if (command.queue === QUARANTINE) {
    throw new DomainError(
      'bad_request',
      '`quarantine` is reserved for held deliveries and cannot be a friend queue',
      {
        field: 'queue',
      },
    );
  }
  if (command.verbs.length === 0 || command.verbs.length > 64) {
    throw new DomainError('bad_request', 'verbs must name 1 to 64 verbs', { field: 'verbs' });
  }
  if (command.verbs.some((v) => v.length === 0 || v.length > 64)) {
    throw new DomainError('bad_request', 'each verb must be 1 to 64 characters', { field: 'verbs' });
  }
  if (grantableOf(command.verbs).length === 0) {
    throw new DomainError(
      'bad_request',
      `the request names only verbs a friend can never be granted; a friend may hold ${FRIEND_GRANTABLE.join(', ')}`,
      { field: 'verbs' },
    );
  }
  if (requester.endpointId !== null && requester.endpointId === command.approver.endpointId) {
    throw new DomainError('bad_request', 'an endpoint cannot befriend itself', { field: 'endpoint' });
  }
}

/**
 * A grant is grantable verbs the request named, at least one; a narrowing is a non-empty subset of
 * the current grant. Nothing else ever reaches an event: the one place a friend's verbs are set.
 */
function checkGrant(verbs: readonly string[], allowed: readonly string[], what: string): string[] {
  if (verbs.length === 0) {
    throw new DomainError(
      'bad_request',
      `${what} must keep at least one verb (revoke to end the friendship)`,
      {
        field: 'verbs',
      },
    );
  }
  const outside = verbs.filter((v) => !isGrantable(v) || !allowed.includes(v));
  if (outside.length > 0) {
    throw new DomainError(
      'bad_request',
      `${what} may only hold ${allowed.join(', ')}; not ${outside.join(', ')}`,
      {
        field: 'verbs',
      },
    );
  }
  return grantableOf(verbs);
}

type Existing = Exclude<FriendState, { status: 'none' }>;

/** The approver's owner, or `not_found` for anyone else (another operator's edges are invisible). */
function ownedByApprover(state: FriendState, operator: string): Existing {
  if (state.status === 'none' || state.approverOperator !== operator)
    throw new DomainError('not_found', NOT_FOUND);
  return state;
}

/** The requester: its operator for a local request, the task holder for one over A2A. */
function heldByRequester(state: FriendState, actor: FriendActor): Existing {
  if (state.status === 'none') throw new DomainError('not_found', NOT_FOUND);
  const ok =
    actor.kind === 'task'
      ? state.via === 'a2a'
      : state.requester.operator !== null && state.requester.operator === actor.operator;
  if (!ok) throw new DomainError('not_found', NOT_FOUND);
  return state;
}

const actorLabel = (actor: FriendActor): string => (actor.kind === 'task' ? actor.label : actor.human);

/**
 * The refusal of any move on a request past its expiry, whether FriendExpired is recorded yet or
 * not: the same 409 either way, naming the expiry (`expires_at`). A caller that gets it for a
 * request still pending records the expiry (ExpireFriend) before answering.
 */
export class RequestExpired extends DomainError {
  constructor(expiresAt: Date) {
    super('conflict', `the request expired at ${expiresAt.toISOString()}`, {
      expires_at: expiresAt.toISOString(),
    });
    this.name = 'RequestExpired';
  }
}

/** Expired: recorded, or pending past its expiry (then FriendExpired is due). */
function refuseExpired(state: Existing, now: Date): void {
  if (state.status === 'expired' || effectiveStatus(state, now) === 'expired') {
    throw new RequestExpired(state.expiresAt);
  }
}

function pendingOnly(state: Existing, now: Date, doing: string): void {
  refuseExpired(state, now);
  if (state.status !== 'pending')
    throw new DomainError('conflict', `cannot ${doing} a request that is ${state.status}`);
}

export function decideFriend(command: FriendCommand, state: FriendState, now: Date): FriendEvent[] {
  const at = now.toISOString();
  switch (command.type) {
    case 'RequestFriend': {
      if (state.status !== 'none')
        throw new DomainError('conflict', `friend request ${command.friendId} exists`);
      if (!command.approver.active)
        throw new DomainError('not_found', 'no endpoint takes friend requests here');
      checkFriendRequest(command);
      return [
        {
          type: 'FriendRequested',
          data: {
            friend_id: command.friendId,
            approver_endpoint_id: command.approver.endpointId,
            approver_slug: command.approver.slug,
            approver_operator: command.approver.operator,
            requester: {
              name: command.requester.name.trim(),
              description: command.requester.description,
              card_url: command.requester.cardUrl,
              endpoint_id: command.requester.endpointId,
              operator: command.requester.operator,
            },
            requested_verbs: [...new Set(command.verbs)],
            queue: command.queue,
            message: command.message,
            via: command.via,
            source_ip: command.sourceIp,
            requested_by: command.by,
            requested_at: at,
            expires_at: new Date(now.getTime() + command.ttlMs).toISOString(),
          },
        },
      ];
    }
    case 'ApproveFriend': {
      const edge = ownedByApprover(state, command.operator);
      pendingOnly(edge, now, 'approve');
      const granted = checkGrant(command.verbs, grantableOf(edge.requestedVerbs), 'a grant');
      return [
        {
          type: 'FriendApproved',
          data: {
            friend_id: edge.id,
            granted_verbs: granted,
            friend_endpoint_id: command.friendEndpointId,
            friend_slug: command.friendSlug,
            approver_queue: command.approverQueue,
            credential_sealed: command.credentialSealed,
            approved_by: command.human,
            approved_at: at,
          },
        },
      ];
    }
    case 'DeclineFriend': {
      const edge = ownedByApprover(state, command.operator);
      pendingOnly(edge, now, 'decline');
      return [
        { type: 'FriendDeclined', data: { friend_id: edge.id, declined_by: command.human, declined_at: at } },
      ];
    }
    case 'NarrowFriend': {
      const edge = ownedByApprover(state, command.operator);
      refuseExpired(edge, now);
      if (edge.status !== 'approved' || !edge.grant) {
        throw new DomainError('conflict', `cannot narrow a friendship that is ${edge.status}`);
      }
      const verbs = checkGrant(command.verbs, edge.grant.verbs, 'a narrowed grant');
      if (verbs.length === edge.grant.verbs.length) return [];
      return [
        {
          type: 'FriendNarrowed',
          data: { friend_id: edge.id, granted_verbs: verbs, narrowed_by: command.human, narrowed_at: at },
        },
      ];
    }
    case 'RevokeFriend': {
      const edge = ownedByApprover(state, command.operator);
      if (edge.status === 'revoked') return [];
      refuseExpired(edge, now);
      if (edge.status !== 'approved')
        throw new DomainError('conflict', `cannot revoke a request that is ${edge.status}`);
      return [
        { type: 'FriendRevoked', data: { friend_id: edge.id, revoked_by: command.human, revoked_at: at } },
      ];
    }
    case 'WithdrawFriend': {
      const edge = heldByRequester(state, command.actor);
      if (edge.status === 'withdrawn') return [];
      pendingOnly(edge, now, 'withdraw');
      return [
        {
          type: 'FriendWithdrawn',
          data: { friend_id: edge.id, withdrawn_by: actorLabel(command.actor), withdrawn_at: at },
        },
      ];
    }
    case 'ExpireFriend': {
      // The clock ends the request, not a person: no actor (as TodoLeaseExpired), whoever records it.
      if (state.status !== 'pending' || state.expiresAt.getTime() > now.getTime()) return [];
      return [{ type: 'FriendExpired', data: { friend_id: state.id, expired_at: at } }];
    }
    case 'CollectFriendCredential': {
      const edge = heldByRequester(state, command.actor);
      if (edge.status !== 'approved' || !edge.grant || edge.grant.credentialCollected) return [];
      return [
        {
          type: 'FriendCredentialCollected',
          data: { friend_id: edge.id, collected_by: actorLabel(command.actor), collected_at: at },
        },
      ];
    }
    default: {
      const never: never = command;
      return never;
    }
  }
}

export const friendDecider: Decider<FriendCommand, FriendState, FriendEvent> = {
  initialState: initialFriendState,
  evolve: evolveFriend,
  decide: decideFriend,
  eventTypes: FRIEND_EVENT_TYPES,
};
