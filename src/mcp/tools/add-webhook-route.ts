import { z } from 'zod';
import { QUEUE_PATTERN } from '../../domain/queue.ts';
import { randomBase32 } from '../../ids.ts';
import { saveRouting, webhookId } from './rules-support.ts';
import { defineTool } from './types.ts';

export const addWebhookRoute = defineTool({
  name: 'add_webhook_route',
  title: 'Add a webhook route',
  description:
    "Adds a route to one of the owning endpoint's queues, for one event type or (without event_type) any. `quarantine` is refused. Owner only.",
  input: z.object({
    webhook_id: webhookId,
    // The reserved name is refused by the decider as a domain error, not as a bad parameter.
    queue: z
      .string()
      .regex(QUEUE_PATTERN)
      .describe("A queue the owning endpoint drains; never 'quarantine'."),
    event_type: z.string().min(1).max(200).optional().describe('Only deliveries of this event type.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  run: (ctx, args) =>
    saveRouting(ctx, args.webhook_id, {
      kind: 'add_route',
      route: { route_id: `rt_${randomBase32(20)}`, queue: args.queue, event_type: args.event_type ?? null },
      ownerQueues: ctx.endpoint.queues,
    }),
});
