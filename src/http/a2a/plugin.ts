import { JsonRpcTransportHandler } from '@a2a-js/sdk/server';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config.ts';
import { HooklineError } from '../../errors.ts';
import { type FriendDeps, friendableEndpoint } from '../../friends/edges.ts';
import type { Runtime } from '../../runtime.ts';
import type { SecretBox } from '../../webhooks/secret-box.ts';
import { limitRequests } from '../rate-limit.ts';
import { friendAgentCard } from './card.ts';
import { FriendRequestHandler, RefusedRequest } from './handler.ts';
import { FriendTaskStore } from './task-store.ts';

export interface A2aDeps {
  readonly runtime: Pick<Runtime, 'config' | 'store' | 'clock' | 'logger'>;
  readonly secretBox: Pick<SecretBox, 'seal' | 'open'>;
  /**
   * Requests per source address and window, 0 for none (HOOKLINE_A2A_RATE_LIMIT and
   * HOOKLINE_A2A_RATE_WINDOW_S; default the runtime's config).
   */
  readonly rateLimit?: Config['a2aRateLimit'];
}

const SLUG = /^[a-z0-9][a-z0-9-]{0,63}$/;
const NOT_FOUND = 'no endpoint takes friend requests under that slug';

/**
 * A2A (protocol 0.3, `@a2a-js/sdk`) for endpoints whose owner takes friend requests: the Agent
 * Card at `/a2a/<slug>/.well-known/agent-card.json` and JSON-RPC at `POST /a2a/<slug>`. Every
 * other endpoint, and every slug that does not exist, answers 404 alike. Each source address may
 * be limited (HOOKLINE_A2A_RATE_LIMIT; 429 with Retry-After) before anything is read or written.
 */
export function createA2aRoutes(deps: A2aDeps) {
  const { config, store, clock } = deps.runtime;
  const friendDeps: FriendDeps & { baseUrl: string } = {
    store,
    clock,
    secretBox: deps.secretBox,
    baseUrl: config.baseUrl,
  };
  const limits = deps.rateLimit ?? config.a2aRateLimit;

  const endpointFor = async (slug: string) => {
    const endpoint = SLUG.test(slug) ? await friendableEndpoint(friendDeps, slug) : undefined;
    if (!endpoint) throw new HooklineError('not_found', NOT_FOUND);
    return endpoint;
  };

  const routes = async (app: FastifyInstance) => {
    // Per source address, before anything is read or written (in memory, per process), as the
    // receivers are limited: 429 too_many_requests with Retry-After.
    await limitRequests(app, limits);

    app.get<{ Params: { slug: string } }>(
      '/a2a/:slug/.well-known/agent-card.json',
      async (request, reply) => {
        const endpoint = await endpointFor(request.params.slug);
        reply.header('cache-control', 'no-cache');
        return friendAgentCard(config.baseUrl, config.version, endpoint);
      },
    );

    app.post<{ Params: { slug: string } }>('/a2a/:slug', async (request, reply) => {
      const endpoint = await endpointFor(request.params.slug);
      const handler = new FriendRequestHandler({
        card: friendAgentCard(config.baseUrl, config.version, endpoint),
        tasks: new FriendTaskStore(friendDeps, endpoint.slug),
        deps: friendDeps,
        slug: endpoint.slug,
        sourceIp: request.ip ?? null,
      });
      let refused = false;
      const transport = new JsonRpcTransportHandler({
        ...bind(handler),
        sendMessage: async (params) => {
          try {
            return await handler.sendMessage(params);
          } catch (err) {
            refused = err instanceof RefusedRequest;
            throw err;
          }
        },
      });
      const response = await transport.handle(request.body);
      if (Symbol.asyncIterator in Object(response)) {
        throw new HooklineError('bad_request', 'streaming is not offered by this agent');
      }
      // A refused friend request is the spec's 400 (and is not stored); other JSON-RPC answers are 200.
      reply.header('cache-control', 'no-store');
      return reply.code(refused ? 400 : 200).send(response);
    });
  };

  return fp(
    async (app) => {
      await app.register(async (scope) => {
        // JSON-RPC bodies are JSON whatever the client labels them.
        scope.addContentTypeParser(
          '*',
          { parseAs: 'string', bodyLimit: 64 * 1024 },
          (_request, body, done) => {
            try {
              done(null, JSON.parse(body as string));
            } catch {
              done(null, { jsonrpc: '2.0', id: null, method: '', params: 'unparsable' });
            }
          },
        );
        await routes(scope);
      });
    },
    { name: 'hookline-a2a', dependencies: ['hookline-errors'] },
  );
}

/** The handler's methods bound to it, so the transport may call them detached. */
function bind(handler: FriendRequestHandler) {
  return {
    getAgentCard: handler.getAgentCard.bind(handler),
    getAuthenticatedExtendedAgentCard: handler.getAuthenticatedExtendedAgentCard.bind(handler),
    sendMessage: handler.sendMessage.bind(handler),
    sendMessageStream: handler.sendMessageStream.bind(handler),
    getTask: handler.getTask.bind(handler),
    cancelTask: handler.cancelTask.bind(handler),
    setTaskPushNotificationConfig: handler.setTaskPushNotificationConfig.bind(handler),
    getTaskPushNotificationConfig: handler.getTaskPushNotificationConfig.bind(handler),
    listTaskPushNotificationConfigs: handler.listTaskPushNotificationConfigs.bind(handler),
    deleteTaskPushNotificationConfig: handler.deleteTaskPushNotificationConfig.bind(handler),
    resubscribe: handler.resubscribe.bind(handler),
  };
}
