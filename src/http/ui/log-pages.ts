import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type LogFilters, listEvents } from '../../../projections/log.queries.ts';
import { HooklineError } from '../../errors.ts';
import { findLoggedDelivery } from '../logged-delivery.ts';
import { layoutContext, sendHtml, type UiDeps, wantsFragment } from './context.ts';
import { formFields, jsonTokens, prettyJson, rawSegments } from './payload-view.ts';
import { replayPanel } from './replay-form.ts';
import { readAtLogPosition } from './snapshot.ts';

const FILTERS = ['provider', 'event_type', 'since', 'q', 'cursor', 'limit', 'after', 'position'] as const;
type FilterName = (typeof FILTERS)[number];

/** Each filter at most once; a repeated one is as invalid as a malformed one (400). */
function readQuery(request: FastifyRequest): Partial<Record<FilterName, string>> {
  const q = (request.query ?? {}) as Record<string, unknown>;
  const out: Partial<Record<FilterName, string>> = {};
  for (const name of FILTERS) {
    const v = q[name];
    if (v === undefined) continue;
    if (typeof v !== 'string') {
      throw new HooklineError('invalid_filter', `${name} may be given once`, { field: name });
    }
    if (v.trim() !== '') out[name] = v.trim();
  }
  return out;
}

const toQuery = (params: Record<string, string | undefined>): string => {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') s.set(k, v);
  const text = s.toString();
  return text ? `?${text}` : '';
};

/** GET /log (spec 4.5) and GET /log/{id} (spec 4.6), whose Replay card posts to replay-form.ts. */
export function registerLogPages(app: FastifyInstance, deps: UiDeps): void {
  app.get('/log', async (request, reply) => {
    const q = readQuery(request);
    const filters: LogFilters = { provider: q.provider, event_type: q.event_type, since: q.since, q: q.q };
    // The rows and the log position they were read at: the page's stream resumes from it.
    const { value: page, position } = await readAtLogPosition(deps.db, (trx) =>
      listEvents(trx, filters, q.cursor, q.limit),
    );
    const limit = q.limit ?? '50';
    const keep = { provider: q.provider, event_type: q.event_type, since: q.since, q: q.q, limit: q.limit };
    const view = {
      events: page.events,
      filters: { ...keep, limit },
      paged: q.cursor !== undefined,
      newestUrl: `/log${toQuery(keep)}`,
      olderUrl: page.next_cursor ? `/log${toQuery({ ...keep, cursor: page.next_cursor })}` : null,
      filtered: Boolean(q.provider || q.event_type || q.since || q.q),
    };
    reply.header('vary', 'HX-Request, HX-History-Restore-Request');
    if (wantsFragment(request)) return sendHtml(reply, deps.views.render('fragments/log-results.njk', view));
    const providerNames = await deps.providerNames();
    return sendHtml(
      reply,
      deps.views.render('pages/log.njk', {
        ...layoutContext(deps, 'log', position),
        ...view,
        providerNames,
        limits: [...new Set(['25', '50', '100', '200', limit])].sort((a, b) => Number(a) - Number(b)),
      }),
    );
  });

  /**
   * The live rows of a log view (the log's first page, the dashboard's latest deliveries): the
   * deliveries newer than `after` (the newest id it shows) that match its filters, newest first,
   * at most `limit`, as rendered rows. `position` is the stream position of the `event-received`
   * that asked, waited for (bounded) so the log read model has it. `x-hookline-more: true`: more
   * than `limit` are newer; the log says so rather than leave a gap.
   */
  app.get('/log/rows', async (request, reply) => {
    const q = readQuery(request);
    if (q.after === undefined || !/^[0-9]{1,18}$/.test(q.after)) {
      throw new HooklineError('invalid_filter', 'after is the newest event id the view shows (0 for none)', {
        field: 'after',
      });
    }
    if (q.position !== undefined && q.position.length <= 128) {
      await deps.projections
        .waitFor(q.position, { projection: 'log', timeoutMs: deps.readYourWritesMs ?? 2000 })
        .catch(() => {}); // an unknown or lagging position: the rows the read model has so far
    }
    const page = await listEvents(
      deps.db,
      { provider: q.provider, event_type: q.event_type, since: q.since, q: q.q, after_id: Number(q.after) },
      undefined,
      q.limit,
    );
    reply.header('x-hookline-more', page.next_cursor === null ? 'false' : 'true');
    return sendHtml(reply, deps.views.render('fragments/log-rows.njk', { events: page.events }));
  });

  app.get<{ Params: { id: string } }>('/log/:id', async (request, reply) => {
    const { id } = request.params;
    const event = await findLoggedDelivery({ ...deps, waitMs: deps.readYourWritesMs }, id);
    if (!event) {
      const shown = /^[0-9]{1,20}$/.test(id) ? ` ${id}` : '';
      throw new HooklineError('not_found', `no event with id${shown}`);
    }
    const bytes = event.payload_bytes;
    const raw = rawSegments(bytes);
    const pretty = prettyJson(bytes);
    return sendHtml(
      reply,
      deps.views.render('pages/event.njk', {
        ...layoutContext(deps, 'log'),
        event,
        headers: Object.entries(event.headers).sort(([a], [b]) => a.localeCompare(b)),
        pretty,
        prettyTokens: pretty === null ? null : jsonTokens(pretty),
        form: formFields(bytes, event.content_type),
        raw,
        rawIsText: raw.every((s) => 'text' in s),
        ...(await replayPanel(deps, event.id)),
      }),
    );
  });
}
