import type { FastifyInstance } from 'fastify';
import { listReplayAttempts } from '../../../projections/replays.queries.ts';
import { deliveryDetail } from '../../deliveries/read.ts';
import type { ReplayAttemptedData } from '../../domain/replay/events.ts';
import { HooklineError } from '../../errors.ts';
import { replayAndRecord } from '../../replay/record.ts';
import { humanResolver, sendHtml, type UiDeps, wantsFragment } from './context.ts';

/** What the Replay card of GET /log/{id} renders: the attempts, and the result of the one just asked for. */
export async function replayPanel(
  deps: Pick<UiDeps, 'db'>,
  eventId: number,
  result: (ReplayAttemptedData & { readonly attempt: number }) | null = null,
) {
  return { event_id: eventId, attempts: await listReplayAttempts(deps.db, eventId), result };
}

/**
 * POST /log/{id}/replay (form field `target_url`): the detail page's Replay, through the same
 * replay and record as the API and the MCP verb (src/replay/record.ts), for the human the screens
 * act for (spec 1.7: the forward-auth user, else HOOKLINE_OPERATOR). The screens show the whole log,
 * so any retained delivery may be replayed here. htmx gets the Replay card with the result and the
 * attempts; a plain form post is sent back to the page (303), whose card lists the new attempt.
 * A refused or failed target is a result, shown and recorded, not an error of this request.
 */
export function registerReplayForm(app: FastifyInstance, deps: UiDeps): void {
  const humanOf = humanResolver(deps.config);

  app.post<{ Params: { id: string } }>('/log/:id/replay', async (request, reply) => {
    const { id } = request.params;
    const event = await deliveryDetail(deps, id);
    if (!event) {
      throw new HooklineError(
        'not_found',
        `no retained event with id${/^[0-9]{1,18}$/.test(id) ? ` ${id}` : ''}`,
      );
    }
    const body = (request.body ?? {}) as Record<string, unknown>;
    const target = typeof body.target_url === 'string' ? body.target_url.trim() : '';
    if (target === '' || target.length > 2048) {
      throw new HooklineError('invalid_body', 'give the target URL (https, at most 2048 characters)', {
        field: 'target_url',
      });
    }
    const recorded = await replayAndRecord(
      { store: deps.store, clock: deps.clock, replay: deps.replay },
      { id: event.id, payload: event.payload_bytes, content_type: event.content_type },
      target,
      { via: 'ui', by: humanOf(request) },
    );
    // Read your write: the card lists the attempt just recorded (bounded; recorded either way).
    await deps.projections
      .waitFor(recorded.position, { projection: 'replays', timeoutMs: deps.readYourWritesMs ?? 2000 })
      .catch(() => {});
    if (!wantsFragment(request)) return reply.redirect(`/log/${event.id}#replay`, 303);
    const panel = await replayPanel(deps, event.id, { ...recorded.attempt, attempt: recorded.number });
    return sendHtml(reply, deps.views.render('fragments/replay-panel.njk', panel));
  });
}
