import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { z } from 'zod';
import { eventDetailOut, listEvents, logRetainedFrom } from '../../../projections/log.queries.ts';
import type { OperatorAuth } from '../../auth/index.ts';
import { HooklineError } from '../../errors.ts';
import { attemptOut, replayAndRecord } from '../../replay/record.ts';
import type { Runtime } from '../../runtime.ts';
import { summarizeZod } from '../errors-plugin.ts';
import { findLoggedDelivery, READ_YOUR_WRITES_MS } from '../logged-delivery.ts';
import { operatorBearer } from './operator-bearer.ts';
import { answer, operatorRoute, problem, refusedAs, withZodSchemas } from './route-schema.ts';
import { EventDetail, EventPage, ReplayAttempt, ReplayIn } from './schemas.ts';

export interface EventsApiDeps {
  readonly runtime: Pick<Runtime, 'store' | 'db' | 'projections' | 'clock' | 'replay'>;
  readonly auth: Pick<OperatorAuth, 'verifyBearer'>;
  /** Bound of the wait for a delivery the log read model has not applied yet (default 2 s). */
  readonly waitMs?: number;
}

/**
 * The event log as an operator may read it: the instance receivers' deliveries (signed, generic,
 * broker), and their own endpoints' (webhook deliveries, hand-offs); another operator's are
 * neither listed nor shown (404, as for an id that does not exist). Same shapes as the MCP tools
 * list_events and get_event (spec 2.2, 2.3).
 *
 * GET /api/v1/events: EventSummary rows with the filters (q too), order and cursor of GET /log,
 * and `retained_from`, the first id retention kept (`hookline forward --from` says when it starts
 * before it).
 * GET /api/v1/events/{id}: EventDetail, the payload as UTF-8 text or base64 (`encoding`): what
 * `hookline events show` prints and `hookline forward` re-sends to a local app, byte for byte.
 * POST /api/v1/events/{id}/replay: `hookline events replay`, the same replay and record as the
 * detail page's Replay and the MCP verb (src/replay/record.ts), of a delivery the operator may read.
 */
/** A filter given twice arrives as an array: refused by name, as GET /log refuses it. */
const filter = (name: string, description: string) =>
  z
    .string({ error: `give ${name} once, as one value` })
    .optional()
    .describe(description);

/** The filters are checked by listEvents, shared with GET /log; here only that each comes once. */
const EventsQuery = refusedAs(
  z.object({
    provider: filter(
      'provider',
      'codehost, payments, chat, generic:<name>, broker:<channel>, webhook:<id>, operator',
    ),
    event_type: filter('event_type', 'The provider-declared event type.'),
    since: filter('since', 'Inclusive lower bound: an ISO-8601 date-time or an event id.'),
    q: filter(
      'q',
      'Full text over payloads and event types (at most 200 characters): words (all must match), "a phrase", -word, or.',
    ),
    cursor: filter('cursor', 'The next_cursor of the previous page (opaque).'),
    limit: filter('limit', '1 to 200, default 50.').meta({ type: 'integer', minimum: 1, maximum: 200 }),
  }),
  (error) => {
    const field = String(error.issues[0]?.path[0]);
    return new HooklineError('invalid_filter', error.issues[0]?.message ?? 'invalid filter', { field });
  },
);
const EventParams = z.object({ id: z.string().describe('The event id.') });
/** A replay without a usable target names the member, whatever is wrong with the body. */
const ReplayBody = refusedAs(
  ReplayIn,
  (error) => new HooklineError('invalid_body', summarizeZod(error), { field: 'target_url' }),
  { absentBody: {} },
);

export function createEventRoutes(deps: EventsApiDeps) {
  const { runtime, auth } = deps;
  const { principal, verify } = operatorBearer(auth);

  const routes = async (scope: FastifyInstance) => {
    const api = withZodSchemas(scope);
    api.addHook('onRequest', verify);

    const operatorOf = (request: FastifyRequest): string => principal(request).operator;

    api.get(
      '/events',
      {
        schema: operatorRoute({
          operationId: 'listEvents',
          summary:
            'Accepted deliveries the operator may read (the instance receivers’, and their own endpoints’ webhooks and hand-offs), newest first',
          tags: ['events'],
          querystring: EventsQuery,
          response: {
            200: answer('A page of EventSummary rows', EventPage),
            400: problem(
              'A filter, the cursor or the limit is invalid (`invalid_filter`, naming the field).',
            ),
          },
        }),
      },
      async (request) => {
        const operator = operatorOf(request);
        const { provider, event_type, since, q, cursor, limit } = request.query;
        const [page, retainedFrom] = await Promise.all([
          listEvents(runtime.db, { provider, event_type, since, q }, cursor, limit, { operator }),
          logRetainedFrom(runtime.db),
        ]);
        return { ...page, retained_from: retainedFrom };
      },
    );

    api.get(
      '/events/:id',
      {
        schema: operatorRoute({
          operationId: 'getEvent',
          summary: 'One accepted delivery with its sanitized headers and payload',
          tags: ['events'],
          params: EventParams,
          response: {
            200: answer('The event', EventDetail),
            404: problem('No event the operator may read has that id (unknown and another’s alike).'),
            503: problem('The log read model stayed behind a delivery the store holds past the bound.'),
          },
        }),
      },
      async (request) => {
        const operator = operatorOf(request);
        const { id } = request.params;
        const event = await findLoggedDelivery(
          { ...runtime, waitMs: deps.waitMs ?? READ_YOUR_WRITES_MS },
          id,
          { operator },
        );
        if (!event) {
          throw new HooklineError(
            'not_found',
            `no event you may read has the id ${/^[0-9]{1,20}$/.test(id) ? id : 'given'}`,
          );
        }
        return eventDetailOut(event);
      },
    );

    api.post(
      '/events/:id/replay',
      {
        schema: operatorRoute({
          operationId: 'replayEvent',
          summary:
            'Send a delivery again, bytes and content type as received, to an https target through the SSRF guard; every attempt is recorded',
          tags: ['events'],
          params: EventParams,
          body: ReplayBody,
          response: {
            200: answer(
              'The target answered (any status; a redirect is reported, never followed)',
              ReplayAttempt,
            ),
            400: problem(
              'No target_url (`invalid_body`), or the SSRF guard refused the target (`replay_refused`, with the recorded `attempt`).',
            ),
            404: problem('No retained event the operator may read has that id.'),
            502: problem(
              'The target could not be reached: timeout, TLS or network (`replay_failed`, with the recorded `attempt`).',
            ),
          },
        }),
      },
      async (request) => {
        const operator = operatorOf(request);
        const { id } = request.params;
        const event = await findLoggedDelivery(
          { ...runtime, waitMs: deps.waitMs ?? READ_YOUR_WRITES_MS },
          id,
          { operator },
        );
        if (!event) {
          throw new HooklineError(
            'not_found',
            `no retained event you may read has the id ${/^[0-9]{1,20}$/.test(id) ? id : 'given'}`,
          );
        }
        const recorded = await replayAndRecord(
          runtime,
          { id: event.id, payload: event.payload_bytes, content_type: event.content_type },
          request.body.target_url,
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
      },
    );
  };

  return fp(
    async (app) => {
      await app.register(routes, { prefix: '/api/v1' });
    },
    { name: 'hookline-events-api', dependencies: ['hookline-errors'] },
  );
}
