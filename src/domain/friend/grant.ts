import { DRAIN_VERBS } from '../endpoint/verbs.ts';

/**
 * What a friend can ever be granted (spec 9, release 0.5.0 item 2): `create_for` plus the drain
 * verbs. Approval, narrowing and the friend endpoint itself never hold anything else.
 */
export const FRIEND_GRANTABLE = ['create_for', ...DRAIN_VERBS] as const;

export type FriendVerb = (typeof FRIEND_GRANTABLE)[number];

export const isGrantable = (verb: string): verb is FriendVerb =>
  (FRIEND_GRANTABLE as readonly string[]).includes(verb);

/** The grantable verbs of a list, deduplicated, in FRIEND_GRANTABLE's order. */
export const grantableOf = (verbs: readonly string[]): FriendVerb[] =>
  FRIEND_GRANTABLE.filter((v) => verbs.includes(v));

/** How long a pending request waits for its approver before it expires (the issue: 14 days). */
export const FRIEND_REQUEST_TTL_MS = 14 * 24 * 60 * 60 * 1000;

/** The todo source and delivery provider of a hand-off across an edge (the issue: `friend:<edge id>`). */
export const friendSource = (friendId: string): string => `friend:${friendId}`;

export const friendIdOfSource = (source: string): string | null =>
  source.startsWith('friend:') ? source.slice('friend:'.length) : null;
