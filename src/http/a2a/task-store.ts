import type { Artifact, Task, TaskState } from '@a2a-js/sdk';
import type { TaskStore } from '@a2a-js/sdk/server';
import type { FriendState } from '../../domain/friend/state.ts';
import { effectiveStatus } from '../../domain/friend/state.ts';
import { collectCredential, type FriendDeps, loadFriend } from '../../friends/edges.ts';
import { isId } from '../../ids.ts';
import { friendCredentialOut } from '../api/friends-present.ts';
import { mcpUrl } from '../api/present.ts';

const TASK_STATE: Record<string, TaskState> = {
  pending: 'input-required',
  approved: 'completed',
  revoked: 'completed',
  declined: 'rejected',
  withdrawn: 'canceled',
  expired: 'failed',
};

const STATUS_TEXT: Record<string, string> = {
  pending: 'Waiting for the owner of the endpoint to approve or decline.',
  approved: 'Approved. The artifact carries the friend endpoint.',
  revoked: 'Approved, then revoked by the owner: the friend endpoint no longer works.',
  declined: 'Declined by the owner.',
  withdrawn: 'Withdrawn by the requester.',
  expired: 'Expired before the owner answered.',
};

/**
 * The A2A tasks of friend requests live in the event log: the task id is the edge id, and every
 * task is derived from the edge's stream when it is loaded, so a restart loses none and nothing
 * is held in memory. Loading an approved task hands the friend endpoint's bearer over exactly
 * once (the collection is recorded); every later load shows it redacted. Nothing is saved here:
 * each move of a task is an event appended by the friend services.
 */
export class FriendTaskStore implements TaskStore {
  private readonly deps: FriendDeps & { readonly baseUrl: string };
  /** The approver endpoint the request was sent to: a task is found only under its own card. */
  private readonly approverSlug: string;

  constructor(deps: FriendDeps & { readonly baseUrl: string }, approverSlug: string) {
    this.deps = deps;
    this.approverSlug = approverSlug;
  }

  async load(taskId: string): Promise<Task | undefined> {
    if (!isId('fr', taskId)) return undefined;
    const { state } = await loadFriend(this.deps, taskId);
    if (state.status === 'none' || state.via !== 'a2a' || state.approverSlug !== this.approverSlug)
      return undefined;
    let token: string | null = null;
    if (state.status === 'approved' && state.grant && !state.grant.credentialCollected) {
      token = (
        await collectCredential(this.deps, {
          friendRef: taskId,
          actor: { kind: 'task', label: 'a2a task holder' },
        })
      ).token;
    }
    return taskOf(this.deps.baseUrl, state, token, this.deps.clock.now());
  }

  async save(): Promise<void> {
    throw new Error('friend request tasks are derived from the event log and never saved directly');
  }
}

export function taskOf(
  baseUrl: string,
  state: Exclude<FriendState, { status: 'none' }>,
  token: string | null,
  now: Date,
): Task {
  const status = effectiveStatus(state, now);
  const at = state.endedAt ?? state.grant?.approvedAt ?? state.requestedAt;
  const artifacts: Artifact[] = [];
  if (state.grant) {
    const grant = state.grant;
    const base = { granted_verbs: [...grant.verbs], queue: state.queue, friend_id: state.id };
    const data = token
      ? { ...friendCredentialOut(baseUrl, grant.friendSlug, token), bearer: token, ...base }
      : {
          slug: grant.friendSlug,
          mcp_url: mcpUrl(baseUrl, grant.friendSlug),
          bearer: null,
          mcp_json: null,
          redacted: true,
          note: 'The bearer was returned once, on the first read after approval.',
          ...base,
        };
    // The credential object's own `token` is the bearer; the artifact names it `bearer` only.
    if ('token' in data) delete (data as Record<string, unknown>).token;
    artifacts.push({
      artifactId: `friend-endpoint-${state.id}`,
      name: 'friend endpoint',
      parts: [{ kind: 'data', data }],
    });
  }
  return {
    kind: 'task',
    id: state.id,
    contextId: state.id,
    status: {
      state: TASK_STATE[status] ?? 'unknown',
      timestamp: (status === 'expired' && state.status === 'pending' ? state.expiresAt : at).toISOString(),
      message: {
        kind: 'message',
        role: 'agent',
        messageId: `${state.id}-${status}`,
        taskId: state.id,
        contextId: state.id,
        parts: [{ kind: 'text', text: STATUS_TEXT[status] ?? status }],
      },
    },
    history: [],
    ...(artifacts.length > 0 ? { artifacts } : {}),
    metadata: { friend_state: status },
  };
}
