import { readAggregate } from '../commands/handle-command.ts';
import type { EndpointFacts } from '../domain/endpoint/state.ts';
import { friendDecider } from '../domain/friend/decide.ts';
import { friendStream } from '../domain/friend/events.ts';
import { friendSource } from '../domain/friend/grant.ts';
import { decidePushTarget } from '../domain/todo/decide.ts';
import { loadEndpoint } from '../endpoints/resolve.ts';
import { HooklineError } from '../errors.ts';
import { isId } from '../ids.ts';
import { handOffTodo, type PushDeps, type Pushed } from '../todos/push.ts';

export interface CreateForInput {
  /** The endpoint calling create_for, as authenticated for this very request. */
  readonly caller: EndpointFacts;
  /** The edge to hand across; a friend endpoint may leave it out (it sits on exactly one). */
  readonly friendId: string | undefined;
  readonly title: string;
  readonly kind: string;
  readonly payload: unknown;
  readonly key: string | null;
}

const NO_EDGE = 'no approved friendship of this endpoint has that id';

/**
 * create_for (the issue "Friends"): a todo on the other side of an approved edge. From the friend
 * endpoint it lands on the approver endpoint's queue fixed at approval; from the approver's
 * endpoint it lands on the friend endpoint's queue. The hand-off is a delivery of provider
 * `friend:<edge id>` with trust mode `token` (the caller's bearer), then a todo and a doorbell,
 * exactly as an operator push (the key is idempotent per target endpoint).
 */
export async function createFor(deps: PushDeps, input: CreateForInput): Promise<Pushed> {
  const { caller } = input;
  const friendId = input.friendId ?? caller.friendId;
  if (!friendId) {
    throw new HooklineError(
      'bad_request',
      'friend_id is required: name the friendship to hand the todo across',
      {
        field: 'friend_id',
      },
    );
  }
  if (!isId('fr', friendId)) throw new HooklineError('not_found', NO_EDGE);
  const { state: edge } = await readAggregate(deps.store, friendStream(friendId), friendDecider);
  if (edge.status !== 'approved' || !edge.grant) throw new HooklineError('not_found', NO_EDGE);

  let targetId: string;
  let queue: string;
  if (caller.friendId === friendId && edge.grant.friendEndpointId === caller.id) {
    targetId = edge.approverEndpointId;
    queue = edge.grant.approverQueue;
  } else if (edge.approverEndpointId === caller.id) {
    targetId = edge.grant.friendEndpointId;
    queue = edge.queue;
  } else {
    throw new HooklineError('not_found', NO_EDGE);
  }
  const target = (await loadEndpoint(deps.store, targetId)).state;
  if (target.status === 'none') throw new HooklineError('not_found', NO_EDGE);
  const decided = decidePushTarget(target, target.operator, queue, deps.clock.now());
  return handOffTodo(deps, decided, {
    human: `endpoint ${caller.slug}`,
    title: input.title,
    kind: input.kind,
    payload: input.payload,
    key: input.key,
    sourceIp: null,
    headers: {},
    via: {
      provider: friendSource(friendId),
      family: 'operator',
      trustMode: 'token',
      verifyDetail: `create_for by endpoint ${caller.slug}`,
      todoSource: friendSource(friendId),
    },
  });
}
