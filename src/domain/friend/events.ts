import { z } from 'zod';
import { defineEvent, typesOf } from '../shared.ts';

/**
 * The friend edge aggregate, stream `friend-<id>` (`fr_…`): a request from a requester to the
 * owner of an endpoint (the approver), and every move after it, each with who made it. The
 * friend endpoint minted on approval is an endpoint aggregate of its own; its bearer enters this
 * stream only sealed (the secret box), so that the requester can collect it once.
 */
export const friendStream = (friendId: string): string => `friend-${friendId}`;

const requester = z.object({
  name: z.string(),
  description: z.string().nullable(),
  /** A remote agent's A2A Agent Card URL, as it gave it (untrusted). */
  card_url: z.string().nullable(),
  /** A local requester: the endpoint that asked and its owner. */
  endpoint_id: z.string().nullable(),
  operator: z.string().nullable(),
});

export const FriendRequested = defineEvent(
  'FriendRequested',
  z.object({
    friend_id: z.string(),
    approver_endpoint_id: z.string(),
    approver_slug: z.string(),
    approver_operator: z.string(),
    requester,
    /** Every verb the request named, grantable or not, as named. */
    requested_verbs: z.array(z.string()),
    /** Where work handed back to the requester lands (the friend endpoint's queue). */
    queue: z.string(),
    message: z.string().nullable(),
    via: z.enum(['a2a', 'local']),
    source_ip: z.string().nullable(),
    requested_by: z.string(),
    requested_at: z.string(),
    expires_at: z.string(),
  }),
);

export const FriendApproved = defineEvent(
  'FriendApproved',
  z.object({
    friend_id: z.string(),
    granted_verbs: z.array(z.string()),
    friend_endpoint_id: z.string(),
    friend_slug: z.string(),
    /** The approver endpoint's queue that the friend's create_for lands on, fixed here. */
    approver_queue: z.string(),
    /** The friend endpoint's bearer, sealed under the secret box (context: the friend id). */
    credential_sealed: z.string(),
    approved_by: z.string(),
    approved_at: z.string(),
  }),
);

export const FriendDeclined = defineEvent(
  'FriendDeclined',
  z.object({ friend_id: z.string(), declined_by: z.string(), declined_at: z.string() }),
);

export const FriendNarrowed = defineEvent(
  'FriendNarrowed',
  z.object({
    friend_id: z.string(),
    granted_verbs: z.array(z.string()),
    narrowed_by: z.string(),
    narrowed_at: z.string(),
  }),
);

export const FriendRevoked = defineEvent(
  'FriendRevoked',
  z.object({ friend_id: z.string(), revoked_by: z.string(), revoked_at: z.string() }),
);

export const FriendWithdrawn = defineEvent(
  'FriendWithdrawn',
  z.object({ friend_id: z.string(), withdrawn_by: z.string(), withdrawn_at: z.string() }),
);

/**
 * A pending request outlived its `expires_at`. No actor: time ended it, not a person, and the
 * process that records it (the expiry sweep, or a move refused as expired) did not make the move
 * (TodoLeaseExpired carries none either). `expired_at` is when it was recorded.
 */
export const FriendExpired = defineEvent(
  'FriendExpired',
  z.object({ friend_id: z.string(), expired_at: z.string() }),
);

/** The bearer was handed to the requester; from here on every read shows it redacted. */
export const FriendCredentialCollected = defineEvent(
  'FriendCredentialCollected',
  z.object({ friend_id: z.string(), collected_by: z.string(), collected_at: z.string() }),
);

export const friendEvents = [
  FriendRequested,
  FriendApproved,
  FriendDeclined,
  FriendNarrowed,
  FriendRevoked,
  FriendWithdrawn,
  FriendExpired,
  FriendCredentialCollected,
] as const;

export type FriendEvent = z.infer<(typeof friendEvents)[number]>;
export const FRIEND_EVENT_TYPES = typesOf(friendEvents);
