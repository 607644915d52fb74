import type { Observable } from 'rxjs';
import { createDrain } from '../domain/todo/drain.ts';
import type { RecordedEvent } from '../eventstore/port.ts';
import { createFollowUps } from '../follow-up.ts';
import { createEndpointWebhookRoutes } from '../http/endpoint-webhooks.ts';
import { createMcpRoutes } from '../http/mcp.ts';
import { createEndpointWebhookReceiver } from '../ingest/endpoint-webhook.ts';
import type { DeliveryRecorder } from '../ingest/recorder.ts';
import { createWebhookRouter } from '../routing/router.ts'; // RULES (issue 7)
import type { Runtime } from '../runtime.ts';
import { createEndpointAuth } from './auth.ts';
import { startDoorbell } from './doorbell.ts';
import { startLeaseExpiry } from './lease-expiry.ts';
import { createRebindingGuard } from './rebinding.ts';
import { createSecretBox } from './secret-box.ts';
import type { McpServices } from './services.ts';
import { createSessionRegistry } from './sessions.ts';
import { allTools } from './tools/index.ts';

export interface McpOptions {
  /** How often the lease-expiry job looks for run-out leases (default 1 s). */
  readonly expiryIntervalMs?: number;
  /** Failed attempts after which a retryable failure is final (default 3). */
  readonly maxAttempts?: number;
  /** How long a webhook's answer waits for what follows its durable delivery (default 2 s). */
  readonly followUpBoundMs?: number;
}

/**
 * The MCP side of one process: a server per session for each vended endpoint, the session
 * registry, the doorbell on the shared `$all` subscription, the lease-expiry job, and the
 * endpoint-owned webhooks that feed the queues. Stopped with the runtime.
 */
export function createMcp(
  runtime: Pick<
    Runtime,
    'config' | 'store' | 'clock' | 'db' | 'projections' | 'logger' | 'onClose' | 'rules' | 'replay' // RULES (issue 7)
  >,
  live: { readonly doorbells$: Observable<RecordedEvent> },
  recorder: Pick<DeliveryRecorder, 'record'>,
  options: McpOptions = {},
) {
  const { config, store, clock, db, logger } = runtime;
  const drain = createDrain({
    store,
    clock,
    db,
    ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}),
  });
  const secretBox = createSecretBox({ secretKey: config.secretKey, dataDir: config.dataDir });
  const services: McpServices = { runtime, drain, secretBox };
  const sessions = createSessionRegistry();
  const followUps = createFollowUps({
    logger,
    ...(options.followUpBoundMs ? { boundMs: options.followUpBoundMs } : {}),
  });

  const doorbell = startDoorbell({ doorbells$: live.doorbells$, sessions, logger });
  const expiry = startLeaseExpiry({
    db,
    clock,
    drain,
    logger,
    ...(options.expiryIntervalMs ? { intervalMs: options.expiryIntervalMs } : {}),
  });
  runtime.onClose(async () => {
    doorbell.unsubscribe();
    await expiry.stop();
    await sessions.closeAll();
    await followUps.idle(); // before the store closes: a late todo or doorbell still gets written
  });

  const routes = createMcpRoutes({
    logger,
    authenticate: createEndpointAuth({ store, clock }),
    checkRebinding: createRebindingGuard(config.baseUrl),
    sessions,
    // The MCP SDK is loaded with the first session (src/http/mcp.ts).
    newServer: async () =>
      (await import('./server.ts')).createSessionServer({ services, tools: allTools, sessions }),
  });
  const webhookRoutes = createEndpointWebhookRoutes({
    config,
    receiver: createEndpointWebhookReceiver({
      store,
      clock,
      config,
      db,
      recorder,
      followUps,
      openSecret: (sealed, webhookId) => secretBox.open(sealed, webhookId),
      router: createWebhookRouter({ store, clock, engine: runtime.rules }), // RULES (issue 7)
    }),
  });
  return { services, sessions, drain, expiry, routes, webhookRoutes };
}

export type Mcp = ReturnType<typeof createMcp>;
