import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Gauge, Registry } from 'prom-client';
import { countTodosByEndpointQueueAndState } from '../../projections/todos.queries.ts';
import { createIdentityResolver } from '../auth/identity.ts';
import { HooklineError } from '../errors.ts';
import { deliveriesTotal, ingestSeconds, processMetrics } from '../metrics/instruments.ts';
import type { Runtime } from '../runtime.ts';

/** Which receiver a request reached: the provider's name, bounded to the ones that exist. */
function providerOf(request: FastifyRequest, status: number): string {
  if (status === 404) return 'unknown';
  const params = (request.params ?? {}) as { provider?: string; name?: string; token?: string };
  if (params.name !== undefined) return `generic:${params.name}`;
  if (params.token !== undefined && request.routeOptions.url?.startsWith('/webhooks/w/'))
    return 'endpoint-webhook';
  return params.provider ?? 'unknown';
}

function outcomeOf(status: number): string {
  if (status < 300) return 'accepted';
  if (status === 401 || status === 403) return 'rejected';
  if (status === 404) return 'unknown_provider';
  if (status === 413) return 'too_large';
  if (status === 429) return 'rate_limited';
  if (status < 500) return 'invalid';
  return 'failed';
}

/** Counts each receiver request by provider and outcome, and times the accepted ones. */
export function countDeliveries(scope: FastifyInstance): void {
  // A callback hook: an async one costs a promise and a microtask on every delivery.
  scope.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const provider = providerOf(request, reply.statusCode);
    deliveriesTotal.inc({ provider, outcome: outcomeOf(reply.statusCode) });
    if (reply.statusCode < 300) ingestSeconds.observe({ provider }, reply.elapsedTime / 1000);
    done();
  });
}

/**
 * GET /metrics in the Prometheus text format (prom-client): the process's counters and histograms
 * (src/metrics/instruments.ts) and gauges read at scrape time (projection lag per read model,
 * stream clients, todos by endpoint, queue and state). Served to whom the screens are: a loopback
 * peer, or a trusted forward-auth proxy that names a user; anyone else gets 403.
 */
export function metricsPlugin(runtime: Pick<Runtime, 'config' | 'db' | 'clock' | 'projectionLag'>) {
  return fp(
    async (app: FastifyInstance) => {
      const identify = createIdentityResolver(runtime.config);
      const scraped = new Registry();
      new Gauge({
        name: 'hookline_projection_lag_events',
        help: 'Events each read model has still to apply (last measurement, counted up to 10,000).',
        labelNames: ['projection'] as const,
        registers: [scraped],
        collect() {
          this.reset();
          for (const p of runtime.projectionLag()?.byProjection ?? [])
            this.set({ projection: p.name }, p.events);
        },
      });
      new Gauge({
        name: 'hookline_projection_lag_seconds',
        help: 'Age of the oldest event each read model has not applied yet (last measurement).',
        labelNames: ['projection'] as const,
        registers: [scraped],
        collect() {
          this.reset();
          for (const p of runtime.projectionLag()?.byProjection ?? [])
            this.set({ projection: p.name }, p.seconds);
        },
      });
      new Gauge({
        name: 'hookline_stream_clients',
        help: 'Clients following the live stream (GET /events) now.',
        registers: [scraped],
        collect() {
          this.set(app.streamClients?.() ?? 0);
        },
      });
      new Gauge({
        name: 'hookline_todos',
        help: 'Todos of the endpoints in service by endpoint (slug), queue and state (the todos read model).',
        labelNames: ['endpoint', 'queue', 'state'] as const,
        registers: [scraped],
        async collect() {
          this.reset();
          for (const row of await countTodosByEndpointQueueAndState(runtime.db, runtime.clock.now())) {
            this.set({ endpoint: row.slug, queue: row.queue, state: row.state }, row.count);
          }
        },
      });

      app.get('/metrics', async (request, reply) => {
        const who = identify(request.raw);
        if (!who.ok) throw new HooklineError('forbidden', who.reason);
        const text = `${await processMetrics.metrics()}\n${await scraped.metrics()}`;
        return reply.header('cache-control', 'no-store').type(processMetrics.contentType).send(text);
      });
    },
    { name: 'hookline-metrics' },
  );
}
