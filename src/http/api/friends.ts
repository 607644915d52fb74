import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { findFriendOf, listFriendsOf } from '../../../projections/friends.queries.ts';
import type { OperatorAuth, OperatorPrincipal } from '../../auth/index.ts';
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
import { summarizeZod } from '../errors-plugin.ts';
import { friendCredentialOut, friendOut } from './friends-present.ts';
import { RefParam } from './schemas.ts';

export interface FriendsApiDeps {
  readonly runtime: Pick<Runtime, 'config' | 'store' | 'clock' | 'db' | 'projections' | 'logger'>;
  readonly auth: Pick<OperatorAuth, 'verifyBearer'>;
  readonly secretBox: Pick<SecretBox, 'seal' | 'open'>;
}

const verbList = z.array(z.string().min(1).max(64)).max(64);
const RequestIn = z.object({
  from: z.string().min(1).max(80).describe('Your endpoint that asks (slug or ep_ id).'),
  to: z.string().min(1).max(80).describe('The slug of the endpoint asked.'),
  verbs: verbList.optional(),
  queue: z.string().max(64).optional(),
  message: z.string().max(2000).nullable().optional(),
});
const VerbsIn = z.object({ verbs: verbList.optional() });
const NarrowIn = z.object({ verbs: verbList });
const AcceptIn = z.object({ accept: z.boolean() });
const FriendParam = z.string().max(64);

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path[0];
    throw new HooklineError(
      'invalid_body',
      summarizeZod(parsed.error),
      field === undefined ? {} : { field: String(field) },
    );
  }
  return parsed.data;
}

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
  const principals = new WeakMap<FastifyRequest, OperatorPrincipal>();
  const principal = (request: FastifyRequest): OperatorPrincipal => {
    const p = principals.get(request);
    if (!p) throw new HooklineError('unauthorized', 'an operator bearer token is required');
    return p;
  };
  const settle = async (position: string | undefined) => {
    if (!position) return;
    await runtime.projections
      .waitFor(position, { timeoutMs: 5000 })
      .catch((err: unknown) => runtime.logger.warn({ err }, 'read model lags behind a friend move'));
  };
  const edgeOut = async (operator: string, id: string) => {
    const row = await findFriendOf(db, operator, id);
    if (!row) throw new HooklineError('not_found', 'no friend request of yours has that id');
    return friendOut(config.baseUrl, row, operator, clock.now());
  };

  const routes = async (api: FastifyInstance) => {
    api.addHook('onRequest', async (request, reply) => {
      try {
        principals.set(request, await auth.verifyBearer(request.headers.authorization));
      } catch (err) {
        reply.header(
          'www-authenticate',
          request.headers.authorization
            ? 'Bearer realm="hookline", error="invalid_token"'
            : 'Bearer realm="hookline"',
        );
        throw err;
      }
    });

    api.get('/friends', async (request) => {
      const p = principal(request);
      const rows = await listFriendsOf(db, p.operator);
      return rows.map((r) => friendOut(config.baseUrl, r, p.operator, clock.now()));
    });

    api.post('/friends', async (request, reply) => {
      const p = principal(request);
      const body = parse(RequestIn, request.body ?? undefined);
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
    });

    type Id = { Params: { id: string } };
    api.post<Id>('/friends/:id/approve', async (request) => {
      const p = principal(request);
      const body = parse(VerbsIn, request.body ?? {});
      const { position } = await approveFriend(friendDeps, {
        operator: p.operator,
        human: p.human,
        friendRef: parse(FriendParam, request.params.id),
        verbs: body.verbs,
      });
      await settle(position);
      return edgeOut(p.operator, request.params.id);
    });

    api.post<Id>('/friends/:id/decline', async (request) => {
      const p = principal(request);
      const { position } = await declineFriend(friendDeps, {
        ...p,
        friendRef: parse(FriendParam, request.params.id),
      });
      await settle(position);
      return edgeOut(p.operator, request.params.id);
    });

    api.post<Id>('/friends/:id/narrow', async (request) => {
      const p = principal(request);
      const body = parse(NarrowIn, request.body ?? undefined);
      const { position } = await narrowFriend(friendDeps, {
        ...p,
        friendRef: parse(FriendParam, request.params.id),
        verbs: body.verbs,
      });
      await settle(position);
      return edgeOut(p.operator, request.params.id);
    });

    api.post<Id>('/friends/:id/revoke', async (request) => {
      const p = principal(request);
      const { position } = await revokeFriend(friendDeps, {
        ...p,
        friendRef: parse(FriendParam, request.params.id),
      });
      await settle(position);
      return edgeOut(p.operator, request.params.id);
    });

    api.post<Id>('/friends/:id/withdraw', async (request) => {
      const p = principal(request);
      const { position } = await withdrawFriend(friendDeps, {
        friendRef: parse(FriendParam, request.params.id),
        actor: { kind: 'operator', operator: p.operator, human: p.human },
      });
      await settle(position);
      return edgeOut(p.operator, request.params.id);
    });

    /** The minted credential of a local request, to the requesting operator, exactly once. */
    api.post<Id>('/friends/:id/credential', async (request, reply) => {
      const p = principal(request);
      const { state, token } = await collectCredential(friendDeps, {
        friendRef: parse(FriendParam, request.params.id),
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
    });

    api.post<{ Params: { ref: string } }>('/endpoints/:ref/friend-requests', async (request) => {
      const p = principal(request);
      const ref = RefParam.parse(request.params.ref);
      const body = parse(AcceptIn, request.body ?? undefined);
      const { state, position } = await setFriendRequests(friendDeps, { ...p, ref, accept: body.accept });
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
    });
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
