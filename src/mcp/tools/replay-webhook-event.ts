import { z } from 'zod';
import { listWebhooksOfEndpoint } from '../../../projections/webhooks.queries.ts';
import { deliveryToReplay } from '../../deliveries/read.ts';
import { HooklineError } from '../../errors.ts';
import { replayAndRecord } from '../../replay/record.ts';
import { failure, ok } from '../result.ts';
import { defineTool } from './types.ts';

export const replayWebhookEvent = defineTool({
  name: 'replay_webhook_event',
  title: 'Replay a webhook delivery',
  description:
    "Sends a delivery of one of this endpoint's webhooks again, body bytes and content type exactly as received, to target_url or else to the endpoint's first replay target (fixed at vend time); with neither, replay_target_required. Targets must be https and resolve only to public addresses (checked now and again when connecting); redirects are reported, never followed. Every attempt, refused ones too, is recorded with the delivery (its detail page lists them).",
  input: z.object({
    event_id: z.number().int().min(1).describe('The delivery (event id) to replay.'),
    target_url: z.string().min(1).max(2048).optional().describe('Where to send it (https only).'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  async run(ctx, args) {
    const { db, store, clock, replay } = ctx.services.runtime;
    const row = await deliveryToReplay(ctx.services.runtime, args.event_id);
    const owned = (await listWebhooksOfEndpoint(db, ctx.endpoint.id)).map((w) => `webhook:${w.id}`);
    if (!row || !owned.includes(row.provider)) {
      throw new HooklineError('not_found', "no retained delivery of this endpoint's webhooks has that id");
    }
    const target = args.target_url ?? ctx.endpoint.replayTargets[0];
    if (target === undefined) {
      throw new HooklineError(
        'replay_target_required',
        'name a target_url: this endpoint was vended without replay targets',
      );
    }
    const { result } = await replayAndRecord({ store, clock, replay }, row, target, {
      via: 'mcp',
      by: ctx.endpoint.slug,
      endpointId: ctx.endpoint.id,
    });
    switch (result.kind) {
      case 'delivered':
        return ok({
          event_id: args.event_id,
          target: result.target,
          status: result.status,
          location: result.location,
          response_snippet: result.responseSnippet,
        });
      case 'refused':
        return failure('replay_refused', `${result.phase} time: ${result.reason}: ${result.detail}`);
      case 'failed':
        return failure('replay_failed', `${result.reason}: ${result.detail}`);
      default: {
        const never: never = result;
        return never;
      }
    }
  },
});
