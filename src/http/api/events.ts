import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { eventDetailOut, listEvents } from '../../../projections/log.queries.ts';
import type { OperatorAuth, OperatorPrincipal } from '../../auth/index.ts';
import { HooklineError } from '../../errors.ts';
import { attemptOut, replayAndRecord } from '../../replay/record.ts';
import type { Runtime } from '../../runtime.ts';
import { summarizeZod } from '../errors-plugin.ts';
import { findLoggedDelivery } from '../logged-delivery.ts';
import { ReplayIn } from './schemas.ts';

export interface EventsApiDeps {
  readonly runtime: Pick<Runtime, 'store' | 'db' | 'projections' | 'clock' | 'replay'>;
  readonly auth: Pick<OperatorAuth, 'verifyBearer'>;
  /** Bound of the wait for a delivery the log read model has not applied yet (default 5 s). */
  readonly waitMs?: number;
}

/**
 * The event log as an operator may read it: the instance receivers' deliveries (signed, generic,
 * broker), and their own endpoints' (webhook deliveries, hand-offs); another operator's are
 * neither listed nor shown (404, as for an id that does not exist). Same shapes as the MCP tools
 * list_events and get_event (spec 2.2, 2.3).
 *
 * GET /api/v1/events: EventSummary rows with the filters (q too), order and cursor of GET /log.
 * GET /api/v1/events/{id}: EventDetail, the payload as UTF-8 text or base64 (`encoding`): what
 * `hookline events show` prints and `hookline forward` re-sends to a local app, byte for byte.
 * POST /api/v1/events/{id}/replay: `hookline events replay`, the same replay and record as the
 * detail page's Replay and the MCP verb (src/replay/record.ts), of a delivery the operator may read.
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

    const operatorOf = (request: FastifyRequest): string => {
      const p = principals.get(request);
      if (!p) throw new HooklineError('unauthorized', 'an operator bearer token is required');
      return p.operator;
    };

    api.get('/events', async (request) => {
      const operator = operatorOf(request);
      const query = (request.query ?? {}) as Record<string, unknown>;
      const once = (name: string): string | undefined => {
        const value = query[name];
        if (value === undefined || typeof value === 'string') return value;
        throw new HooklineError('invalid_filter', `give ${name} once, as one value`, { field: name });
      };
      return listEvents(
        runtime.db,
        { provider: once('provider'), event_type: once('event_type'), since: once('since'), q: once('q') },
        once('cursor'),
        once('limit'),
        { operator },
      );
    });

    api.get<{ Params: { id: string } }>('/events/:id', async (request) => {
      const operator = operatorOf(request);
      const { id } = request.params;
      const event = await findLoggedDelivery({ ...runtime, waitMs: deps.waitMs ?? 5000 }, id, { operator });
      if (!event) {
        throw new HooklineError(
          'not_found',
          `no event you may read has the id ${/^[0-9]{1,20}$/.test(id) ? id : 'given'}`,
        );
      }
      return eventDetailOut(event);
    });

    api.post<{ Params: { id: string } }>('/events/:id/replay', async (request) => {
      const operator = operatorOf(request);
      const parsed = ReplayIn.safeParse(request.body ?? {});
      if (!parsed.success) {
        throw new HooklineError('invalid_body', summarizeZod(parsed.error), { field: 'target_url' });
      }
      const { id } = request.params;
      const event = await findLoggedDelivery({ ...runtime, waitMs: deps.waitMs ?? 5000 }, id, { operator });
      if (!event) {
        throw new HooklineError(
          'not_found',
          `no retained event you may read has the id ${/^[0-9]{1,20}$/.test(id) ? id : 'given'}`,
        );
      }
      const recorded = await replayAndRecord(
        runtime,
        { id: event.id, payload: event.payload_bytes, content_type: event.content_type },
        parsed.data.target_url,
        { via: 'api', by: operator },
      );
      const attempt = attemptOut(recorded);
      const { result } = recorded;
      if (result.kind === 'refused') {
        throw new HooklineError(
          'replay_refused',
          `${result.phase} time: ${result.reason}: ${result.detail}`,
          {
            attempt,
          },
        );
      }
      if (result.kind === 'failed') {
        throw new HooklineError('replay_failed', `${result.reason}: ${result.detail}`, { attempt });
      }
      return attempt;
    });
  };

  return fp(
    async (app) => {
      await app.register(routes, { prefix: '/api/v1' });
    },
    { name: 'hookline-events-api', dependencies: ['hookline-errors'] },
  );
}
