import Fastify, { type FastifyBaseLogger, type FastifyInstance, type RouteOptions } from 'fastify';
import { createOperatorAuth } from './auth/index.ts';
import { oauthPlugin } from './auth/plugin.ts';
import { createFollowUps } from './follow-up.ts';
import type { FriendExpiryOptions } from './friends/expiry.ts';
import { friendExpiryPlugin } from './friends/expiry-plugin.ts';
import { createA2aRoutes } from './http/a2a/plugin.ts';
import { adminPlugin } from './http/admin.ts';
import { createEventRoutes } from './http/api/events.ts';
import { createFriendsRoutes } from './http/api/friends.ts';
import { openApiPlugin } from './http/api/openapi.ts';
import { createApiRoutes } from './http/api/plugin.ts';
import { createQuarantineRoutes } from './http/api/quarantine.ts'; // RULES (issue 7)
import { connectionsPlugin } from './http/connections.ts';
import { createEndpointWebhookRoutes } from './http/endpoint-webhooks.ts';
import { clientErrorProblem, errorsPlugin, frameworkErrors } from './http/errors-plugin.ts';
import { healthPlugin } from './http/health.ts';
import { countDeliveries, metricsPlugin } from './http/metrics.ts';
import { limitRequests } from './http/rate-limit.ts';
import { RequestLogController } from './http/request-log.ts';
import { securityHeadersPlugin } from './http/security-headers.ts';
import { type StreamOptions, streamPlugin } from './http/stream.ts';
import { createUi, sseRetryMs } from './http/ui/index.ts';
import { createProviderRoutes } from './http/ui/providers-routes.ts';
import { createWebhookRoutes } from './http/webhooks.ts';
import { startBrokerConsumers } from './ingest/broker/index.ts';
import { createEndpointWebhookReceiver } from './ingest/endpoint-webhook.ts';
import { createIngestion } from './ingest/index.ts';
import type { LiveHubOptions } from './live/hub.ts';
import { createLive, livePlugin } from './live/index.ts';
import { createMcp } from './mcp/index.ts';
import type { SessionRegistry } from './mcp/sessions.ts';
import { retentionPlugin } from './retention/plugin.ts';
import { createWebhookRouter } from './rules/router.ts';
import type { Runtime } from './runtime.ts';
import { createKeptTodos } from './todos/kept.ts';
import { createSecretBox } from './webhooks/secret-box.ts';

export interface BuildAppOptions {
  /** Log each request (default true; tests may turn it off). */
  readonly requestLogging?: boolean;
  /** Tests: timings of the live hub (activity window, heartbeat) and the stream (keep-alive, buffer). */
  readonly live?: LiveHubOptions;
  readonly stream?: StreamOptions;
  /** Tests: sees every route as it is registered (the OpenAPI document is checked against them). */
  readonly onRoute?: (route: RouteOptions) => void;
  /** Tests: how often the friend-request expiry sweep runs (default once a minute). */
  readonly friendExpiry?: FriendExpiryOptions;
  /** Tests: sees the MCP session registry (what a session's transport keeps is checked). */
  readonly onMcpSessions?: (sessions: SessionRegistry) => void;
}

/**
 * Builds the Fastify app over a runtime; server.ts listens (style.md §4). One plugin per
 * surface; register new surfaces below, each with its dependencies passed explicitly.
 */
export async function buildApp(runtime: Runtime, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  const { config } = runtime;
  const app = Fastify({
    loggerInstance: runtime.logger as FastifyBaseLogger,
    // Request lines at info, static files at debug (README "Logs").
    logController: new RequestLogController({ disableRequestLogging: options.requestLogging === false }),
    // X-Forwarded-For is honoured only from the configured proxies (source_ip, forward auth).
    trustProxy: config.trustedProxies.length > 0 ? [...config.trustedProxies] : false,
    bodyLimit: config.maxBodyBytes,
    // Errors Fastify raises before our routes run (a bad percent-escape, an unparsable request)
    // become problem documents too; so do requests during shutdown (errorsPlugin refuses them),
    // which return503OnClosing would answer with Fastify's own JSON.
    frameworkErrors,
    clientErrorHandler: clientErrorProblem,
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true },
  });

  if (options.onRoute) app.addHook('onRoute', options.onRoute);
  await app.register(connectionsPlugin); // shutdown closes connections that sent nothing yet
  await app.register(errorsPlugin);
  await app.register(securityHeadersPlugin({ baseUrl: config.baseUrl })); // CSP and friends, every response
  await app.register(
    healthPlugin({
      db: runtime.db,
      health: runtime.health,
      version: config.version,
    }),
  );

  // Surfaces (one line each):
  const ingestion = createIngestion({ store: runtime.store, config, clock: runtime.clock, db: runtime.db });
  await app.register(createProviderRoutes({ config, ingestion }));
  // Broker consumers share the receivers' recorder and provider directory, so a toggle is seen at once.
  let broker: Awaited<ReturnType<typeof startBrokerConsumers>>;
  app.addHook('onReady', async () => {
    broker = await startBrokerConsumers(runtime, ingestion.recorder, { providers: ingestion.directory });
  });
  app.addHook('onClose', async () => {
    await broker?.stop();
  });
  const live = createLive(runtime, options.live); // the one $all subscription: SSE clients and MCP doorbells
  await app.register(livePlugin(live));
  await app.register(
    streamPlugin({
      hub: live.hub,
      logger: runtime.logger,
      retryMs: () => sseRetryMs(runtime),
      options: options.stream,
    }),
  );
  await app.register(metricsPlugin(runtime)); // GET /metrics, to whom the screens are served
  // Webhook signing secrets are sealed by a vend or create_webhook (MCP) and opened by the ingest
  // route; a friend endpoint's bearer is sealed at approval until its requester collects it.
  const secretBox = createSecretBox({ secretKey: config.secretKey, dataDir: config.dataDir });
  await app.register(createUi(runtime, live, { secretBox }));
  await app.register(retentionPlugin(runtime));
  const operatorAuth = createOperatorAuth(runtime); // OAuth for operators: /oauth/*, bearer checks of /api/v1
  await app.register(oauthPlugin({ config, db: runtime.db, auth: operatorAuth }));
  // Before the /api/v1 routes: the document is generated from the routes registered after it.
  await app.register(openApiPlugin({ baseUrl: config.baseUrl, version: config.version })); // /api/v1/openapi.json, /api/docs
  await app.register(
    createApiRoutes({
      runtime,
      auth: operatorAuth,
      recorder: ingestion.recorder,
      seal: (secret, webhookId) => secretBox.seal(secret, webhookId),
    }),
  );
  await app.register(createQuarantineRoutes({ runtime, auth: operatorAuth })); // RULES (issue 7): /api/v1/quarantine
  await app.register(createEventRoutes({ runtime, auth: operatorAuth })); // /api/v1/events/{id}: `hookline forward`
  await app.register(adminPlugin({ projections: runtime.projections })); // loopback only: `hookline projections`
  await app.register(createFriendsRoutes({ runtime, auth: operatorAuth, secretBox })); // /api/v1/friends
  // /a2a/<slug>: Agent Card and friend requests, behind their own limit (HOOKLINE_A2A_RATE_LIMIT)
  await app.register(createA2aRoutes({ runtime, secretBox, rateLimit: config.a2aRateLimit }));
  await app.register(friendExpiryPlugin(runtime, options.friendExpiry)); // pending requests past 14 days: FriendExpired
  // What follows a durable delivery (todo, doorbell, disposition) is awaited up to a bound.
  const followUps = createFollowUps({ logger: runtime.logger });
  runtime.onClose(() => followUps.idle()); // before the store closes: a late todo or doorbell still gets written
  // MCP per endpoint, doorbell, lease expiry; create_for hands todos over through the recorder.
  // A todo an endpoint webhook hands off is kept for its claim, which then needs no read of it.
  const keptTodos = createKeptTodos();
  const mcp = createMcp(runtime, live.hub, {
    secretBox,
    recorder: ingestion.recorder,
    followUps,
    keptTodos,
  });
  await app.register(mcp.routes); // /mcp/<slug> (Streamable HTTP)
  options.onMcpSessions?.(mcp.sessions);
  const receiver = createEndpointWebhookReceiver({
    store: runtime.store,
    clock: runtime.clock,
    config,
    db: runtime.db,
    recorder: ingestion.recorder,
    followUps,
    openSecret: (sealed, webhookId) => secretBox.open(sealed, webhookId),
    router: createWebhookRouter({ store: runtime.store, clock: runtime.clock, engine: runtime.rules }),
    keptTodos,
  });
  // The receivers, behind one rate limit per source address (HOOKLINE_RECEIVER_RATE_LIMIT).
  await app.register(async (receivers) => {
    await limitRequests(receivers, config.receiverRateLimit);
    countDeliveries(receivers); // hookline_deliveries_total, hookline_ingest_duration_seconds
    await receivers.register(createWebhookRoutes({ config, ingestion })); // POST /webhooks/<provider>
    await receivers.register(createEndpointWebhookRoutes({ config, receiver })); // POST /webhooks/w/<token>
  });

  return app;
}
