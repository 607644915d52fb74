import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { findFriendOf, listFriendsOf } from '../../../projections/friends.queries.ts';
import type { OperatorAuth } from '../../auth/index.ts';
import { HooklineError } from '../../errors.ts';
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
import type { Runtime } from '../../runtime.ts';
import type { SecretBox } from '../../webhooks/secret-box.ts';
import { READ_YOUR_WRITES_MS } from '../logged-delivery.ts';
import { friendCredentialOut, friendOut } from './friends-present.ts';
import { operatorBearer } from './operator-bearer.ts';
import { answer, fieldProblem, operatorRoute, problem, refusedAs, withZodSchemas } from './route-schema.ts';
import { FriendCredentialOut, FriendOut, FriendRequestsOut, RefParams } from './schemas.ts';

export interface FriendsApiDeps {
  readonly runtime: Pick<Runtime, 'config' | 'store' | 'clock' | 'db' | 'projections' | 'logger'>;
  readonly auth: Pick<OperatorAuth, 'verifyBearer'>;
  readonly secretBox: Pick<SecretBox, 'seal' | 'open'>;
}

const verbList = z.array(z.string().min(1).max(64)).max(64);
const bodyOf = <T extends z.ZodType>(schema: T) => refusedAs(schema, fieldProblem('invalid_body'));
const RequestIn = bodyOf(
  z.object({
    from: z.string().min(1).max(80).describe('Your endpoint that asks (slug or ep_ id).'),
    to: z.string().min(1).max(80).describe('The slug of the endpoint asked.'),
    verbs: verbList.optional().describe('The verbs asked for; default: the drain verbs and create_for.'),
    queue: z.string().max(64).optional(),
    message: z.string().max(2000).nullable().optional(),
  }),
);
const VerbsIn = bodyOf(
  z
    .object({ verbs: verbList.optional().describe('Narrow the grant to these (default: as asked).') })
    .optional(),
);
const NarrowIn = bodyOf(z.object({ verbs: verbList }));
const AcceptIn = bodyOf(z.object({ accept: z.boolean() }));
const FriendParams = bodyOf(z.object({ id: z.string().max(64).describe('The friend edge id.') }));

/**
 * The operator API of friends (the issue "Friends"): list the edges of the caller's endpoints,
 * ask as one of them, approve (optionally narrowing), decline, narrow, revoke, withdraw, collect a
 * minted credential once, and switch an endpoint's friend requests on or off. Another operator's
 * edges answer 404, as an unknown id does.
 */
export function createFriendsRoutes(deps: FriendsApiDeps) {
  const { runtime, auth } = deps;
  const { config, store, clock, db } = runtime;
  const friendDeps: FriendDeps = { store, clock, secretBox: deps.secretBox };
  const { principal, verify } = operatorBearer(auth);
  const settle = async (position: string | undefined) => {
    if (!position) return;
    await runtime.projections
      .waitFor(position, { timeoutMs: READ_YOUR_WRITES_MS })
      .catch((err: unknown) => runtime.logger.warn({ err }, 'read model lags behind a friend move'));
  };
  const edgeOut = async (operator: string, id: string) => {
    const row = await findFriendOf(db, operator, id);
    if (!row) throw new HooklineError('not_found', 'no friend request of yours has that id');
    return friendOut(config.baseUrl, row, operator, clock.now());
  };

  /** The schema of a move of an edge (`/friends/{id}/<move>`), with the body it takes, if any. */
  const edge = <B extends z.ZodType = z.ZodUnknown>(
    operationId: string,
    summary: string,
    extra: { body?: B; invalid?: string } = {},
  ) =>
    operatorRoute({
      operationId,
      summary,
      tags: ['friends'],
      params: FriendParams,
      // Without one, whatever body comes is ignored, as it always was.
      ...((extra.body ? { body: extra.body } : {}) as { body: B }),
      response: {
        200: answer('The edge as moved', FriendOut),
        ...(extra.invalid ? { 400: problem(extra.invalid) } : {}),
        404: problem('Another operator’s edge, or an unknown id.'),
        409: problem('A move the edge’s state does not allow (an expired request included).'),
      },
    });

  const routes = async (scope: FastifyInstance) => {
    const api = withZodSchemas(scope);
    api.addHook('onRequest', verify);

    api.get(
      '/friends',
      {
        schema: operatorRoute({
          operationId: 'listFriends',
          summary: 'The friend edges of the operator’s endpoints, incoming and outgoing',
          tags: ['friends'],
          response: { 200: answer('Friend edges', z.array(FriendOut)) },
        }),
      },
      async (request) => {
        const p = principal(request);
        const rows = await listFriendsOf(db, p.operator);
        return rows.map((r) => friendOut(config.baseUrl, r, p.operator, clock.now()));
      },
    );

    api.post(
      '/friends',
      {
        schema: operatorRoute({
          operationId: 'requestFriend',
          summary: 'Ask, as one of the operator’s endpoints, another endpoint of this instance',
          tags: ['friends'],
          body: RequestIn,
          response: {
            201: answer('The request', FriendOut),
            400: problem('Invalid body, only ungrantable verbs, or `quarantine`; nothing stored.'),
            404: problem('`from` is not the operator’s, or `to` takes no friend requests.'),
          },
        }),
      },
      async (request, reply) => {
        const p = principal(request);
        const { body } = request;
        const { state, position } = await requestFromEndpoint(friendDeps, {
          operator: p.operator,
          human: p.human,
          fromRef: body.from,
          toSlug: body.to,
          verbs: body.verbs ?? [
            'create_for',
            'list_todos',
            'get_todo',
            'claim',
            'claim_next',
            'complete',
            'fail',
            'release',
            'heartbeat',
          ],
          queue: body.queue,
          message: body.message ?? null,
        });
        await settle(position);
        if (state.status === 'none') throw new Error('unreachable: a request was recorded');
        return reply.code(201).send(await edgeOut(p.operator, state.id));
      },
    );

    api.post(
      '/friends/:id/approve',
      {
        schema: edge(
          'approveFriend',
          'Approve a request to an endpoint of the operator, optionally narrowing',
          {
            body: VerbsIn,
            invalid: 'Verbs outside the request.',
          },
        ),
      },
      async (request) => {
        const p = principal(request);
        const { position } = await approveFriend(friendDeps, {
          operator: p.operator,
          human: p.human,
          friendRef: request.params.id,
          verbs: request.body?.verbs,
        });
        await settle(position);
        return edgeOut(p.operator, request.params.id);
      },
    );

    api.post(
      '/friends/:id/decline',
      { schema: edge('declineFriend', 'Decline a request to an endpoint of the operator') },
      async (request) => {
        const p = principal(request);
        const { position } = await declineFriend(friendDeps, { ...p, friendRef: request.params.id });
        await settle(position);
        return edgeOut(p.operator, request.params.id);
      },
    );

    api.post(
      '/friends/:id/narrow',
      {
        schema: edge('narrowFriend', 'Narrow the verbs of an approved friend', {
          body: NarrowIn,
          invalid: 'Invalid body, or verbs outside the grant.',
        }),
      },
      async (request) => {
        const p = principal(request);
        const { position } = await narrowFriend(friendDeps, {
          ...p,
          friendRef: request.params.id,
          verbs: request.body.verbs,
        });
        await settle(position);
        return edgeOut(p.operator, request.params.id);
      },
    );

    api.post(
      '/friends/:id/revoke',
      { schema: edge('revokeFriend', 'Revoke an approved friend: its endpoint stops working') },
      async (request) => {
        const p = principal(request);
        const { position } = await revokeFriend(friendDeps, { ...p, friendRef: request.params.id });
        await settle(position);
        return edgeOut(p.operator, request.params.id);
      },
    );

    api.post(
      '/friends/:id/withdraw',
      { schema: edge('withdrawFriend', 'Withdraw a request one of the operator’s endpoints made') },
      async (request) => {
        const p = principal(request);
        const { position } = await withdrawFriend(friendDeps, {
          friendRef: request.params.id,
          actor: { kind: 'operator', operator: p.operator, human: p.human },
        });
        await settle(position);
        return edgeOut(p.operator, request.params.id);
      },
    );

    /** The minted credential of a local request, to the requesting operator, exactly once. */
    api.post(
      '/friends/:id/credential',
      {
        schema: operatorRoute({
          operationId: 'collectFriendCredential',
          summary: 'The friend endpoint’s credential, to the requesting operator, once',
          tags: ['friends'],
          params: FriendParams,
          response: {
            200: answer('The credential, shown this once', FriendCredentialOut),
            404: problem('Another operator’s edge, or an unknown id.'),
            409: problem('Not approved yet, or handed out already.'),
          },
        }),
      },
      async (request, reply) => {
        const p = principal(request);
        const { state, token } = await collectCredential(friendDeps, {
          friendRef: request.params.id,
          actor: { kind: 'operator', operator: p.operator, human: p.human },
        });
        if (token === null || state.status === 'none' || !state.grant) {
          throw new HooklineError(
            'conflict',
            'no credential to collect: not approved yet, or handed out already',
          );
        }
        reply.header('cache-control', 'no-store');
        return friendCredentialOut(config.baseUrl, state.grant.friendSlug, token);
      },
    );

    api.post(
      '/endpoints/:ref/friend-requests',
      {
        schema: operatorRoute({
          operationId: 'setFriendRequests',
          summary: 'Switch an endpoint’s friend requests (and its Agent Card) on or off',
          tags: ['friends'],
          params: RefParams,
          body: AcceptIn,
          response: {
            200: answer('The endpoint’s setting', FriendRequestsOut),
            400: problem('Invalid body.'),
            404: problem('No endpoint of the caller has that slug or id.'),
          },
        }),
      },
      async (request) => {
        const p = principal(request);
        const { ref } = request.params;
        const { state, position } = await setFriendRequests(friendDeps, {
          ...p,
          ref,
          accept: request.body.accept,
        });
        await settle(position);
        if (state.status === 'none')
          throw new HooklineError('not_found', 'no endpoint of yours has that slug or id');
        return {
          slug: state.slug,
          accept_friend_requests: state.acceptFriendRequests,
          agent_card_url: state.acceptFriendRequests
            ? `${config.baseUrl}/a2a/${state.slug}/.well-known/agent-card.json`
            : null,
        };
      },
    );
  };

  return fp(
    async (app) => {
      // JSON only, as the rest of /api/v1.
      await app.register(
        async (scope) => {
          scope.addContentTypeParser('*', (_request, _payload, done) =>
            done(new HooklineError('invalid_body', 'send a JSON body with Content-Type: application/json')),
          );
          await routes(scope);
        },
        { prefix: '/api/v1' },
      );
    },
    { name: 'hookline-friends-api', dependencies: ['hookline-errors'] },
  );
}
