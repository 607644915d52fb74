import { hashCredential, mintEndpointToken } from '../auth/credentials.ts';
import { type CommandDeps, handleCommand, readAggregate } from '../commands/handle-command.ts';
import { endpointDecider } from '../domain/endpoint/decide.ts';
import { endpointStream } from '../domain/endpoint/events.ts';
import type { Verb } from '../domain/endpoint/verbs.ts';
import {
  type FriendActor,
  type FriendCommand,
  friendDecider,
  RequestExpired,
  type RequestFriend,
} from '../domain/friend/decide.ts';
import { friendStream } from '../domain/friend/events.ts';
import { FRIEND_REQUEST_TTL_MS, grantableOf } from '../domain/friend/grant.ts';
import type { FriendState } from '../domain/friend/state.ts';
import { QUARANTINE } from '../domain/queue.ts';
import { ensureAgent } from '../endpoints/agents.ts';
import { loadEndpoint, resolveEndpointId } from '../endpoints/resolve.ts';
import { claimSlug } from '../endpoints/vend.ts';
import { HooklineError } from '../errors.ts';
import type { Position } from '../eventstore/port.ts';
import { isId, newId } from '../ids.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';

/**
 * Friend edges (the issue "Friends", release 0.5.0): every move goes through the friend decider on
 * `friend-<id>`; approval, narrowing and revocation also move the friend endpoint, endpoint
 * first, so that a crash in between leaves the endpoint no wider than the edge records.
 */
export interface FriendDeps extends CommandDeps {
  readonly secretBox: Pick<SecretBox, 'seal' | 'open'>;
}

export interface Operator {
  readonly operator: string;
  readonly human: string;
}

const NOT_FOUND = 'no friend request of yours has that id';
const RETRY = { retries: 7, conflictMessage: 'the friend request changed concurrently; retry' } as const;

export const loadFriend = (deps: CommandDeps, friendId: string) =>
  readAggregate(deps.store, friendStream(friendId), friendDecider);

function friendIdOf(ref: string): string {
  if (!isId('fr', ref)) throw new HooklineError('not_found', NOT_FOUND);
  return ref;
}

/** The approver endpoint behind a slug, if it takes friend requests; anything else is "not found". */
export async function friendableEndpoint(deps: CommandDeps, slug: string) {
  const endpointId = await resolveEndpointId(deps.store, slug);
  if (!endpointId || endpointId === slug) return undefined;
  const { state } = await loadEndpoint(deps.store, endpointId);
  if (state.status !== 'active' || !state.acceptFriendRequests) return undefined;
  if (state.expiresAt && state.expiresAt.getTime() <= deps.clock.now().getTime()) return undefined;
  return state;
}

/**
 * What a caller brings to a friend request: the domain's `RequestFriend` without what this module
 * decides (the edge's id, the approver resolved from the slug, the time to live).
 */
export type NewRequest = Omit<RequestFriend, 'type' | 'friendId' | 'approver' | 'ttlMs'> & {
  readonly approverSlug: string;
};

/** A new edge, pending its approver. A refused request (spec 7's 400) is not stored. */
export async function requestFriend(
  deps: CommandDeps,
  input: NewRequest,
): Promise<{ readonly state: FriendState; readonly position: Position | undefined }> {
  const { approverSlug, ...request } = input;
  const approver = await friendableEndpoint(deps, approverSlug);
  if (!approver) throw new HooklineError('not_found', 'no endpoint takes friend requests under that slug');
  const friendId = newId('fr');
  const result = await handleCommand(
    deps,
    friendStream(friendId),
    friendDecider,
    {
      ...request,
      type: 'RequestFriend',
      friendId,
      approver: { endpointId: approver.id, slug: approver.slug, operator: approver.operator, active: true },
      ttlMs: FRIEND_REQUEST_TTL_MS,
    },
    { newStream: true, retries: 0 },
  );
  return { state: result.state, position: result.position };
}

/** A local request: one of the operator's endpoints asks another endpoint of this instance. */
export async function requestFromEndpoint(
  deps: CommandDeps,
  input: Operator & {
    readonly fromRef: string;
    readonly toSlug: string;
    readonly verbs: readonly string[];
    readonly queue: string | undefined;
    readonly message: string | null;
  },
) {
  const fromId = await resolveEndpointId(deps.store, input.fromRef);
  const from = fromId ? (await loadEndpoint(deps.store, fromId)).state : undefined;
  if (from?.status !== 'active' || from.operator !== input.operator) {
    throw new HooklineError('not_found', 'no active endpoint of yours has that slug or id', {
      field: 'from',
    });
  }
  const queue = input.queue ?? from.queues.find((q) => q !== QUARANTINE) ?? 'inbox';
  return requestFriend(deps, {
    approverSlug: input.toSlug,
    requester: {
      name: from.agentName,
      description: `endpoint ${from.slug} of this instance`,
      cardUrl: null,
      endpointId: from.id,
      operator: input.operator,
    },
    verbs: input.verbs,
    queue,
    message: input.message,
    via: 'local',
    sourceIp: null,
    by: input.human,
  });
}

/**
 * Records FriendExpired for a pending request past its expiry; nothing for any other edge. The
 * expiry sweep calls it for each due request, and a move refused as expired calls it too.
 */
export function expireFriend(deps: CommandDeps, friendId: string) {
  return handleCommand(deps, friendStream(friendId), friendDecider, { type: 'ExpireFriend' }, RETRY);
}

/**
 * Runs `work`; when the decider refuses it because the request expired, records the expiry
 * first, then refuses with the decider's own answer (409 naming `expires_at`). So every path that
 * finds a request expired leaves the log, and the read model, saying so.
 */
async function recordingExpiry<T>(deps: CommandDeps, friendId: string, work: () => T | Promise<T>) {
  try {
    return await work();
  } catch (err) {
    if (err instanceof RequestExpired) await expireFriend(deps, friendId);
    throw err;
  }
}

const friendCommand = (deps: CommandDeps, friendId: string, command: FriendCommand) =>
  recordingExpiry(deps, friendId, () =>
    handleCommand(deps, friendStream(friendId), friendDecider, command, RETRY),
  );

/** The decision on the edge as read, before anything else moves (an endpoint minted or narrowed). */
const decideFirst = (deps: CommandDeps, friendId: string, command: FriendCommand, state: FriendState) =>
  recordingExpiry(deps, friendId, () => friendDecider.decide(command, state, deps.clock.now()));

/**
 * Approval (the approver's owner, possibly narrowing): checks the decision first on the edge as
 * read, then mints the friend endpoint (exactly the granted verbs, the requester's queue, a
 * bearer sealed for the requester to collect once), then records the approval. If the edge moved
 * meanwhile and the approval is refused, the endpoint just minted is revoked.
 */
export async function approveFriend(
  deps: FriendDeps,
  input: Operator & { readonly friendRef: string; readonly verbs: readonly string[] | undefined },
) {
  const friendId = friendIdOf(input.friendRef);
  const { state } = await loadFriend(deps, friendId);
  if (state.status === 'none' || state.approverOperator !== input.operator) {
    throw new HooklineError('not_found', NOT_FOUND);
  }
  const verbs = input.verbs ?? grantableOf(state.requestedVerbs);
  const approver = (await loadEndpoint(deps.store, state.approverEndpointId)).state;
  if (approver.status !== 'active') {
    throw new HooklineError('conflict', `the endpoint ${state.approverSlug} is no longer active`);
  }
  const approverQueue = approver.queues.find((q) => q !== QUARANTINE);
  if (!approverQueue)
    throw new HooklineError('conflict', `the endpoint ${state.approverSlug} drains no queue`);
  const draft = (endpointId: string, slug: string, sealed: string): FriendCommand => ({
    type: 'ApproveFriend',
    operator: input.operator,
    human: input.human,
    verbs,
    friendEndpointId: endpointId,
    friendSlug: slug,
    approverQueue,
    credentialSealed: sealed,
  });
  // Refused here (not pending, expired, verbs outside the request) before anything is minted.
  await decideFirst(deps, friendId, draft('ep_pending', 'pending', ''), state);

  const endpointId = newId('ep');
  const agent = await ensureAgent(deps, { operator: input.operator, name: state.requester.name });
  const slug = await claimSlug(deps, state.requester.name, endpointId);
  const token = mintEndpointToken();
  const granted = grantableOf(verbs) as Verb[];
  const vended = await handleCommand(
    deps,
    endpointStream(endpointId),
    endpointDecider,
    {
      type: 'VendEndpoint',
      endpointId,
      slug,
      agentId: agent.agentId,
      agentName: agent.name,
      operator: input.operator,
      human: input.human,
      queues: [state.queue],
      verbs: granted,
      tokenHash: hashCredential(token),
      webhookId: '',
      replayTargets: [],
      expiresAt: null,
      friendId,
    },
    { newStream: true, retries: 0 },
  );
  try {
    const approved = await friendCommand(
      deps,
      friendId,
      draft(endpointId, slug, deps.secretBox.seal(token, friendId)),
    );
    return { state: approved.state, position: approved.position ?? vended.position };
  } catch (err) {
    await handleCommand(deps, endpointStream(endpointId), endpointDecider, {
      type: 'RevokeEndpoint',
      operator: input.operator,
      human: input.human,
    }).catch(() => {});
    throw err;
  }
}

export async function declineFriend(deps: CommandDeps, input: Operator & { readonly friendRef: string }) {
  const friendId = friendIdOf(input.friendRef);
  return friendCommand(deps, friendId, {
    type: 'DeclineFriend',
    operator: input.operator,
    human: input.human,
  });
}

/** Narrows the friend endpoint in place, then the edge's recorded grant with it (release 0.5.0 item 2). */
export async function narrowFriend(
  deps: CommandDeps,
  input: Operator & { readonly friendRef: string; readonly verbs: readonly string[] },
) {
  const friendId = friendIdOf(input.friendRef);
  const { state } = await loadFriend(deps, friendId);
  const command: FriendCommand = {
    type: 'NarrowFriend',
    operator: input.operator,
    human: input.human,
    verbs: input.verbs,
  };
  const events = await decideFirst(deps, friendId, command, state);
  if (events.length === 0 || state.status === 'none' || !state.grant) return { state, position: undefined };
  await handleCommand(
    deps,
    endpointStream(state.grant.friendEndpointId),
    endpointDecider,
    { type: 'NarrowEndpoint', operator: input.operator, human: input.human, verbs: grantableOf(input.verbs) },
    RETRY,
  );
  return friendCommand(deps, friendId, command);
}

/** Revokes the friend endpoint (its bearer answers 401 from then on), then the edge. */
export async function revokeFriend(deps: CommandDeps, input: Operator & { readonly friendRef: string }) {
  const friendId = friendIdOf(input.friendRef);
  const { state } = await loadFriend(deps, friendId);
  const command: FriendCommand = { type: 'RevokeFriend', operator: input.operator, human: input.human };
  const events = await decideFirst(deps, friendId, command, state);
  if (events.length === 0 || state.status === 'none' || !state.grant) return { state, position: undefined };
  await handleCommand(
    deps,
    endpointStream(state.grant.friendEndpointId),
    endpointDecider,
    { type: 'RevokeEndpoint', operator: input.operator, human: input.human },
    RETRY,
  );
  return friendCommand(deps, friendId, command);
}

export async function withdrawFriend(
  deps: CommandDeps,
  input: { readonly friendRef: string; readonly actor: FriendActor },
) {
  const friendId = friendIdOf(input.friendRef);
  return friendCommand(deps, friendId, { type: 'WithdrawFriend', actor: input.actor });
}

/**
 * The friend endpoint's bearer, handed to the requester exactly once: the collection is recorded
 * at the revision read, so of two racing reads one gets it and the other sees it redacted.
 */
export async function collectCredential(
  deps: FriendDeps,
  input: { readonly friendRef: string; readonly actor: FriendActor },
): Promise<{
  readonly state: FriendState;
  readonly token: string | null;
  /** Where the collection was recorded (undefined when nothing was): what a screen waits for. */
  readonly position: Position | undefined;
}> {
  const friendId = friendIdOf(input.friendRef);
  const result = await handleCommand(
    deps,
    friendStream(friendId),
    friendDecider,
    { type: 'CollectFriendCredential', actor: input.actor },
    RETRY,
  );
  const { state, position } = result;
  if (result.events.length === 0 || state.status === 'none' || !state.grant) {
    return { state, token: null, position };
  }
  return { state, token: deps.secretBox.open(state.grant.credentialSealed, friendId), position };
}

/** Owner's switch: the endpoint takes friend requests (its Agent Card is served) or answers 404. */
export async function setFriendRequests(
  deps: CommandDeps,
  input: Operator & { readonly ref: string; readonly accept: boolean },
) {
  const endpointId = await resolveEndpointId(deps.store, input.ref);
  if (!endpointId) throw new HooklineError('not_found', 'no endpoint of yours has that slug or id');
  return handleCommand(
    deps,
    endpointStream(endpointId),
    endpointDecider,
    { type: 'SetFriendRequests', operator: input.operator, human: input.human, accept: input.accept },
    RETRY,
  );
}
