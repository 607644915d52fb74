import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { listAgents } from '../../../projections/agents.queries.ts';
import { listEndpoints } from '../../../projections/endpoints.queries.ts';
import type { OperatorAuth } from '../../auth/index.ts';
import { DEFAULT_VERBS, normalizeVerbs } from '../../domain/endpoint/verbs.ts';
import { DEFAULT_QUEUE } from '../../domain/queue.ts';
import { changeEndpointScope } from '../../endpoints/change.ts';
import { revokeEndpoint } from '../../endpoints/revoke.ts';
import { vendEndpoint } from '../../endpoints/vend.ts';
import { HooklineError } from '../../errors.ts';
import { createFollowUps } from '../../follow-up.ts';
import type { DeliveryRecorder } from '../../ingest/recorder.ts';
import { sanitizeHeaders } from '../../ingest/sanitize.ts';
import type { Runtime } from '../../runtime.ts';
import { pushTodo } from '../../todos/push.ts';
import { READ_YOUR_WRITES_MS } from '../logged-delivery.ts';
import { operatorBearer } from './operator-bearer.ts';
import { endpointRowOut, endpointStateOut, vendedOut } from './present.ts';
import { checkReplayTargetAtVend } from './replay-targets.ts';
import { answer, operatorRoute, problem, withZodSchemas } from './route-schema.ts';
import {
  AgentOut,
  EndpointOut,
  Me,
  PushTodoIn,
  PushTodoOut,
  RefParams,
  UpdateEndpointIn,
  VendEndpointIn,
  VendEndpointOut,
} from './schemas.ts';

export interface ApiDeps {
  readonly runtime: Pick<Runtime, 'config' | 'store' | 'clock' | 'db' | 'projections' | 'logger'>;
  readonly auth: Pick<OperatorAuth, 'verifyBearer'>;
  readonly recorder: Pick<DeliveryRecorder, 'record'>;
  /** The vend-time replay target guard (release 0.4.0); default: the shared SSRF guard. */
  readonly checkReplayTarget?: (url: string) => Promise<void>;
  /** Seals a webhook signing secret (the secret box): a vend with `webhook_scheme`. */
  readonly seal?: (secret: string, webhookId: string) => string;
  /** Bound of the read-your-writes wait after a write (default READ_YOUR_WRITES_MS, 2 s). */
  readonly waitMs?: number;
  /** How long a push's answer waits for its todo and doorbell once its delivery is durable (default 2 s). */
  readonly followUpBoundMs?: number;
}

/**
 * The operator API, /api/v1 (spec 4.10-4.13). Every route needs an operator access token,
 * checked before the body is read, so a bad bearer is 401 whatever the body; then the route's zod
 * schemas check the request (route-schema.ts) and describe it in the OpenAPI document. Error bodies are problem documents served as application/json (the errors plugin).
 */
export function createApiRoutes(deps: ApiDeps) {
  return fp(
    async (app) => {
      await app.register(async (api) => routes(api, deps), { prefix: '/api/v1' });
    },
    { name: 'hookline-api', dependencies: ['hookline-errors'] },
  );
}

async function routes(api: FastifyInstance, deps: ApiDeps): Promise<void> {
  const { runtime, auth } = deps;
  const { config, store, clock, db } = runtime;
  const { principal, verify } = operatorBearer(auth);
  const checkReplayTarget = deps.checkReplayTarget ?? checkReplayTargetAtVend;
  const followUps = createFollowUps({
    logger: runtime.logger,
    ...(deps.followUpBoundMs ? { boundMs: deps.followUpBoundMs } : {}),
  });
  // A push answered before its todo was written: the todo is written before the store closes.
  api.addHook('onClose', () => followUps.idle());

  // JSON only: anything else is an invalid body (spec 4.11/4.13 answer 400), not a 415.
  api.addContentTypeParser('*', (_request, _payload, done) =>
    done(new HooklineError('invalid_body', 'send a JSON body with Content-Type: application/json')),
  );

  /** Read-your-writes: the next list call sees this write (bounded; a slow projection only delays). */
  const settle = async (position: string | undefined, projection?: string) => {
    if (!position) return;
    await runtime.projections
      .waitFor(position, {
        timeoutMs: deps.waitMs ?? READ_YOUR_WRITES_MS,
        ...(projection ? { projection } : {}),
      })
      .catch((err: unknown) => runtime.logger.warn({ err, position }, 'read model lags behind a write'));
  };

  await api.register(async (scope) => {
    const secured = withZodSchemas(scope);
    secured.addHook('onRequest', verify);

    secured.get(
      '/me',
      {
        schema: operatorRoute({
          operationId: 'whoAmI',
          summary: 'Who the access token acts for',
          tags: ['operator'],
          response: { 200: answer('The signed-in operator', Me) },
        }),
      },
      async (request) => {
        const p = principal(request);
        return { operator: p.operator, client_id: p.clientId, scope: p.scope };
      },
    );

    secured.get(
      '/agents',
      {
        schema: operatorRoute({
          operationId: 'listAgents',
          summary: "The signed-in operator's agents",
          tags: ['endpoints'],
          response: { 200: answer('Agents', z.array(AgentOut)) },
        }),
      },
      async (request) => {
        const rows = await listAgents(db, principal(request).operator);
        return rows.map((r) => ({
          id: r.id,
          name: r.name,
          ...(r.description ? { description: r.description } : {}),
        }));
      },
    );

    secured.get(
      '/endpoints',
      {
        schema: operatorRoute({
          operationId: 'listEndpoints',
          summary: "The signed-in operator's endpoints (never a credential)",
          tags: ['endpoints'],
          response: { 200: answer('Endpoints', z.array(EndpointOut)) },
        }),
      },
      async (request) => {
        const rows = await listEndpoints(db, principal(request).operator);
        return rows.map((r) => endpointRowOut(config.baseUrl, r));
      },
    );

    secured.post(
      '/endpoints',
      {
        schema: operatorRoute({
          operationId: 'vendEndpoint',
          summary: 'Register (or reuse) an agent and mint its endpoint, credential, queue and webhook',
          tags: ['endpoints'],
          body: VendEndpointIn,
          response: {
            201: answer('Vended; the token appears only here', VendEndpointOut),
            400: problem(
              'Invalid body, missing name, reserved queue, both queue and queues, or a refused replay target; nothing minted.',
            ),
          },
        }),
      },
      async (request, reply) => {
        const p = principal(request);
        const { body } = request;
        const vended = await vendEndpoint(
          { store, clock, checkReplayTarget, seal: deps.seal },
          {
            operator: p.operator,
            human: p.human,
            name: body.name,
            queues: body.queues ?? [body.queue ?? DEFAULT_QUEUE],
            verbs: body.verbs ? normalizeVerbs(body.verbs) : [...DEFAULT_VERBS],
            expiresAt: body.expires_at ? new Date(body.expires_at) : null,
            replayTargets: body.replay_targets ?? [],
            webhookSigning: { scheme: body.webhook_scheme ?? 'none', secret: body.webhook_secret },
          },
        );
        await settle(vended.position);
        reply.header('cache-control', 'no-store');
        return reply.code(201).send(vendedOut(config.baseUrl, vended));
      },
    );

    secured.patch(
      '/endpoints/:ref',
      {
        schema: operatorRoute({
          operationId: 'updateEndpoint',
          summary: 'Change the queues an endpoint drains, or narrow its verbs',
          description:
            'Recorded as one event on the endpoint. Removing a queue that holds pending or claimed todos needs `move_to`, which moves them first.',
          tags: ['endpoints'],
          params: RefParams,
          body: UpdateEndpointIn,
          response: {
            200: answer('The endpoint as it is now', EndpointOut),
            400: problem(
              'Invalid body, reserved or malformed queue, more than 16 queues, a verb the endpoint does not hold, or move_to outside the new queues.',
            ),
            404: problem('No endpoint of the caller has that slug or id.'),
            409: problem(
              'A removed queue still holds pending or claimed todos and no move_to was given, or the endpoint is revoked.',
            ),
          },
        }),
      },
      async (request) => {
        const p = principal(request);
        const { ref } = request.params;
        const { body } = request;
        // The live todos of a removed queue are counted in the todos read model: let it catch up.
        await settle(await store.committedPosition(), 'todos');
        const { state, position } = await changeEndpointScope(
          { store, clock, db },
          {
            ref,
            operator: p.operator,
            human: p.human,
            queues: body.queues,
            verbs: body.verbs ? normalizeVerbs(body.verbs) : undefined,
            moveTo: body.move_to,
          },
        );
        // A move_to wrote TodoMoved events before the endpoint's: the agent's next list sees them.
        await Promise.all([
          settle(position, 'endpoints'),
          body.move_to ? settle(position, 'todos') : undefined,
        ]);
        return endpointStateOut(config.baseUrl, state);
      },
    );

    secured.post(
      '/endpoints/:ref/revoke',
      {
        schema: operatorRoute({
          operationId: 'revokeEndpoint',
          summary: 'Revoke an endpoint: its credential, MCP sessions and todo pushes stop working',
          description: 'Idempotent: revoking a revoked endpoint answers 200 with it unchanged.',
          tags: ['endpoints'],
          params: RefParams,
          response: {
            200: answer('The endpoint, now revoked', EndpointOut),
            404: problem('No endpoint of the caller has that slug or id.'),
          },
        }),
      },
      async (request) => {
        const p = principal(request);
        const { ref } = request.params;
        const { state, position } = await revokeEndpoint(
          { store, clock },
          { ref, operator: p.operator, human: p.human },
        );
        if (state.status === 'none')
          throw new HooklineError('not_found', 'no endpoint of yours has that slug or id');
        await settle(position, 'endpoints');
        return endpointStateOut(config.baseUrl, state);
      },
    );

    secured.post(
      '/endpoints/:ref/todos',
      {
        schema: operatorRoute({
          operationId: 'pushTodo',
          summary: 'Push a todo onto one of the endpoint’s queues and ring its doorbell',
          tags: ['endpoints'],
          params: RefParams,
          body: PushTodoIn,
          response: {
            201: answer('The todo (created=false when the key matched a live todo)', PushTodoOut),
            400: problem(
              'Invalid body, empty or over-long title, queue outside the vended scope, or no queue on a multi-queue endpoint.',
            ),
            404: problem('No endpoint of the caller has that slug or id (unknown and foreign alike).'),
            409: problem('The endpoint is revoked (or expired).'),
          },
        }),
      },
      async (request, reply) => {
        const p = principal(request);
        const { ref } = request.params;
        const { body } = request;
        const pushed = await pushTodo(
          { store, clock, recorder: deps.recorder, followUps },
          {
            ref,
            operator: p.operator,
            human: p.human,
            title: body.title,
            queue: body.queue,
            kind: body.kind,
            payload: body.payload ?? null,
            key: body.key ?? null,
            sourceIp: request.ip ?? null,
            headers: sanitizeHeaders(request.headers),
          },
        );
        await settle(pushed.position, 'todos');
        return reply.code(201).send({
          id: pushed.id,
          endpoint_id: pushed.endpointId,
          slug: pushed.slug,
          queue: pushed.queue,
          state: pushed.state,
          created: pushed.created,
          event_id: pushed.eventId,
        });
      },
    );
  });
}
