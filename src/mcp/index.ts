import type { Observable } from 'rxjs';
import type { RecordedEvent } from '../eventstore/port.ts';
import type { FollowUps } from '../follow-up.ts';
import { createMcpRoutes } from '../http/mcp.ts';
import type { DeliveryRecorder } from '../ingest/recorder.ts';
import type { Runtime } from '../runtime.ts';
import { createDrain } from '../todos/drain.ts';
import type { KeptTodos } from '../todos/kept.ts';
import { startLeaseExpiry } from '../todos/lease-expiry.ts';
import type { SecretBox } from '../webhooks/secret-box.ts';
import { createEndpointAuth } from './auth.ts';
import { startDoorbell } from './doorbell.ts';
import { createReadAhead } from './read-ahead.ts';
import { createRebindingGuard } from './rebinding.ts';
import type { McpServices } from './services.ts';
import { createSessionRegistry } from './sessions.ts';
import { allTools } from './tools/index.ts';

export interface McpOptions {
  /** How often the lease-expiry job looks for run-out leases (default 1 s). */
  readonly expiryIntervalMs?: number;
  /** Failed attempts after which a retryable failure is final (default 3). */
  readonly maxAttempts?: number;
}

/**
 * The MCP side of one process: a server per session for each vended endpoint, the session
 * registry, the doorbell on the shared `$all` subscription and the lease-expiry job. Stopped with
 * the runtime. (The endpoint-owned webhooks that feed the queues are an ingest route: app.ts.)
 */
export function createMcp(
  runtime: Pick<
    Runtime,
    'config' | 'store' | 'clock' | 'db' | 'projections' | 'logger' | 'onClose' | 'rules' | 'replay' // RULES (issue 7)
  >,
  live: { readonly doorbells$: Observable<RecordedEvent> },
  shared: {
    readonly secretBox: SecretBox;
    readonly recorder: Pick<DeliveryRecorder, 'record'>;
    readonly followUps: FollowUps;
    /** Todos this process wrote last, shared with the endpoint webhooks' hand-off (src/todos/kept.ts). */
    readonly keptTodos?: KeptTodos;
  },
  options: McpOptions = {},
) {
  const { config, store, clock, db, logger } = runtime;
  const drain = createDrain({
    store,
    clock,
    db,
    ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}),
    ...(shared.keptTodos ? { kept: shared.keptTodos } : {}),
  });
  const services: McpServices = {
    runtime,
    drain,
    secretBox: shared.secretBox,
    recorder: shared.recorder,
    followUps: shared.followUps,
  };
  const sessions = createSessionRegistry();

  const doorbell = startDoorbell({ doorbells$: live.doorbells$, store, sessions, logger });
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
  });

  const routes = createMcpRoutes({
    logger,
    authenticate: createEndpointAuth({ store, clock }),
    readAhead: createReadAhead(drain),
    checkRebinding: createRebindingGuard(config.baseUrl),
    sessions,
    // The MCP SDK is loaded with the first session (src/http/mcp.ts).
    newServer: async (endpoint) =>
      (await import('./server.ts')).createSessionServer({ services, tools: allTools, sessions }, endpoint),
  });
  return { services, sessions, drain, expiry, routes };
}

export type Mcp = ReturnType<typeof createMcp>;
