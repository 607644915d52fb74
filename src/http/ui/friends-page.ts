import type { FastifyInstance, FastifyRequest } from 'fastify';
import { listEndpoints } from '../../../projections/endpoints.queries.ts';
import { listFriendsOf } from '../../../projections/friends.queries.ts';
import type { FriendRow } from '../../../projections/friends.table.ts';
import { FRIEND_GRANTABLE, grantableOf } from '../../domain/friend/grant.ts';
import { QUARANTINE } from '../../domain/queue.ts';
import { HooklineError } from '../../errors.ts';
import type { Position } from '../../eventstore/port.ts';
import {
  approveFriend,
  collectCredential,
  declineFriend,
  type FriendDeps,
  narrowFriend,
  requestFromEndpoint,
  revokeFriend,
  setFriendRequests,
  withdrawFriend,
} from '../../friends/edges.ts';
import type { SecretBox } from '../../webhooks/secret-box.ts';
import { agentCardUrl } from '../a2a/card.ts';
import { friendCredentialOut, friendStatusOf } from '../api/friends-present.ts';
import { humanResolver, layoutContext, sendHtml, type UiDeps } from './context.ts';

export interface FriendsPageDeps extends UiDeps {
  readonly secretBox: Pick<SecretBox, 'seal' | 'open'>;
}

const form = (request: FastifyRequest): Record<string, string> =>
  (request.body ?? {}) as Record<string, string>;

/** The checked verbs of a form: one checkbox `verb_<name>` per verb (forms keep the last value of a name). */
const checkedVerbs = (body: Record<string, string>): string[] =>
  FRIEND_GRANTABLE.filter((v) => body[`verb_${v}`] !== undefined);

function edgeView(row: FriendRow, now: Date) {
  return {
    ...row,
    state: friendStatusOf(row, now),
    grantable: grantableOf(row.requested_verbs),
    ungrantable: row.requested_verbs.filter((v) => !(FRIEND_GRANTABLE as readonly string[]).includes(v)),
    granted: row.granted_verbs ?? [],
  };
}

/**
 * GET /friends and its forms (the issue "Friends"): incoming requests to approve (the verbs as
 * checkboxes, only grantable ones offered) or decline; approved friendships with their grant and
 * last activity, to narrow or revoke; the operator's own requests, with the minted credential
 * shown once; a form for one of the operator's endpoints to ask another endpoint of this
 * instance; and each endpoint's switch for friend requests (its A2A Agent Card). The operator is
 * the forward-auth user or HOOKLINE_OPERATOR, as on the other screens; every form is same-origin
 * only (the UI scope refuses cross-site posts). Names, descriptions and messages are untrusted
 * text: autoescaped, never links.
 */
export function registerFriendsPage(app: FastifyInstance, deps: FriendsPageDeps): void {
  const operatorOf = humanResolver(deps.config);
  const friendDeps: FriendDeps = { store: deps.store, clock: deps.clock, secretBox: deps.secretBox };
  const settle = async (position: Position | undefined) => {
    if (position)
      await deps.projections.waitFor(position, { timeoutMs: deps.readYourWritesMs ?? 2000 }).catch(() => {});
  };

  const render = async (request: FastifyRequest, extra: Record<string, unknown> = {}) => {
    const operator = operatorOf(request);
    const now = deps.clock.now();
    const [rows, endpoints] = await Promise.all([
      listFriendsOf(deps.db, operator),
      listEndpoints(deps.db, operator),
    ]);
    const edges = rows.map((r) => edgeView(r, now));
    const mine = endpoints
      .filter((e) => e.state === 'active' && e.friend_id === null)
      .map((e) => ({
        slug: e.slug,
        agent_name: e.agent_name,
        queues: e.queues.filter((q) => q !== QUARANTINE),
        accept: e.accept_friend_requests,
        card_url: e.accept_friend_requests ? agentCardUrl(deps.config.baseUrl, e.slug) : null,
      }));
    return deps.views.render('pages/friends.njk', {
      ...layoutContext(deps, 'friends'),
      operator,
      incoming: edges.filter((e) => e.approver_operator === operator && e.state === 'pending'),
      friendships: edges.filter((e) => e.approver_operator === operator && e.state !== 'pending'),
      outgoing: edges.filter((e) => e.requester_operator === operator),
      endpoints: mine,
      grantable: FRIEND_GRANTABLE,
      ...extra,
    });
  };

  app.get('/friends', async (request, reply) => sendHtml(reply, await render(request)));

  const who = (request: FastifyRequest) => {
    const operator = operatorOf(request);
    return { operator, human: operator };
  };
  type Id = { Params: { id: string } };

  app.post<Id>('/friends/:id/approve', async (request, reply) => {
    const verbs = checkedVerbs(form(request));
    const { position } = await approveFriend(friendDeps, {
      ...who(request),
      friendRef: request.params.id,
      verbs,
    });
    await settle(position);
    return reply.redirect('/friends', 303);
  });

  app.post<Id>('/friends/:id/decline', async (request, reply) => {
    const { position } = await declineFriend(friendDeps, { ...who(request), friendRef: request.params.id });
    await settle(position);
    return reply.redirect('/friends', 303);
  });

  app.post<Id>('/friends/:id/narrow', async (request, reply) => {
    const verbs = checkedVerbs(form(request));
    const { position } = await narrowFriend(friendDeps, {
      ...who(request),
      friendRef: request.params.id,
      verbs,
    });
    await settle(position);
    return reply.redirect('/friends', 303);
  });

  app.post<Id>('/friends/:id/revoke', async (request, reply) => {
    const { position } = await revokeFriend(friendDeps, { ...who(request), friendRef: request.params.id });
    await settle(position);
    return reply.redirect('/friends', 303);
  });

  app.post<Id>('/friends/:id/withdraw', async (request, reply) => {
    const w = who(request);
    const { position } = await withdrawFriend(friendDeps, {
      friendRef: request.params.id,
      actor: { kind: 'operator', operator: w.operator, human: w.human },
    });
    await settle(position);
    return reply.redirect('/friends', 303);
  });

  /** The minted credential of the operator's own request, shown in this one answer and never again. */
  app.post<Id>('/friends/:id/credential', async (request, reply) => {
    const w = who(request);
    const { state, token, position } = await collectCredential(friendDeps, {
      friendRef: request.params.id,
      actor: { kind: 'operator', operator: w.operator, human: w.human },
    });
    if (token === null || state.status === 'none' || !state.grant) {
      throw new HooklineError('conflict', 'no credential to show: not approved yet, or shown already');
    }
    const credential = friendCredentialOut(deps.config.baseUrl, state.grant.friendSlug, token);
    await settle(position);
    const html = await render(request, {
      credential: {
        ...credential,
        friend_id: state.id,
        mcp_json: JSON.stringify(credential.mcp_json, null, 2),
      },
    });
    return sendHtml(reply, html);
  });

  app.post('/friends/request', async (request, reply) => {
    const body = form(request);
    const queue = body.queue?.trim() ? body.queue.trim() : undefined;
    const { position } = await requestFromEndpoint(friendDeps, {
      ...who(request),
      fromRef: body.from ?? '',
      toSlug: (body.to ?? '').trim(),
      verbs: checkedVerbs(body),
      queue,
      message: body.message?.trim() ? body.message : null,
    });
    await settle(position);
    return reply.redirect('/friends', 303);
  });

  app.post<{ Params: { slug: string } }>('/friends/endpoints/:slug/accept', async (request, reply) => {
    const accept = form(request).accept === 'on';
    const { position } = await setFriendRequests(friendDeps, {
      ...who(request),
      ref: request.params.slug,
      accept,
    });
    await settle(position);
    return reply.redirect('/friends', 303);
  });
}
