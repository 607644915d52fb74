import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { findWebhook } from '../../../projections/webhooks.queries.ts';
import type { OperatorAuth, OperatorPrincipal } from '../../auth/index.ts';
import { HooklineError } from '../../errors.ts';
import type { Runtime } from '../../runtime.ts';
import { findLoggedDelivery } from '../logged-delivery.ts';

export interface EventsApiDeps {
  readonly runtime: Pick<Runtime, 'store' | 'db' | 'projections'>;
  readonly auth: Pick<OperatorAuth, 'verifyBearer'>;
  /** Bound of the wait for a delivery the log read model has not applied yet (default 5 s). */
  readonly waitMs?: number;
}

const WEBHOOK_PROVIDER = /^webhook:(wh_[a-z2-7]{20})$/;

/**
 * GET /api/v1/events/{id}: one delivery with its raw bytes (base64), content type and sanitized
 * headers, what `hookline forward` re-sends to a local app. Provider deliveries are the
 * instance's, as on the log screen; an endpoint webhook's belong to its owner, and any other
 * operator gets the same 404 as for an id that does not exist.
 */
export function createEventRoutes(deps: EventsApiDeps) {
  const { runtime, auth } = deps;
  const principals = new WeakMap<FastifyRequest, OperatorPrincipal>();

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

    api.get<{ Params: { id: string } }>('/events/:id', async (request) => {
      const p = principals.get(request);
      if (!p) throw new HooklineError('unauthorized', 'an operator bearer token is required');
      const { id } = request.params;
      const notFound = () =>
        new HooklineError('not_found', `no event with id ${/^[0-9]{1,20}$/.test(id) ? id : ''}`.trim());
      const event = await findLoggedDelivery({ ...runtime, waitMs: deps.waitMs ?? 5000 }, id);
      if (!event) throw notFound();
      const webhook = WEBHOOK_PROVIDER.exec(event.provider);
      if (webhook) {
        const owner = (await findWebhook(runtime.db, webhook[1]!))?.operator;
        if (owner !== p.operator) throw notFound();
      }
      return {
        id: event.id,
        provider: event.provider,
        event_type: event.event_type,
        trust_mode: event.trust_mode,
        verified: event.verified,
        payload_size: event.payload_size,
        received_at: event.received_at,
        external_id: event.external_id,
        content_type: event.content_type,
        headers: event.headers,
        disposition: event.disposition,
        payload_base64: Buffer.from(event.payload_bytes).toString('base64'),
      };
    });
  };

  return fp(
    async (app) => {
      await app.register(routes, { prefix: '/api/v1' });
    },
    { name: 'hookline-events-api', dependencies: ['hookline-errors'] },
  );
}
