import { z } from 'zod';
import { saveRouting, webhookId } from './rules-support.ts';
import { defineTool } from './types.ts';

export const removeWebhookRoute = defineTool({
  name: 'remove_webhook_route',
  title: 'Remove a webhook route',
  description:
    "Removes a route. Routes created earlier by friend endpoints are reviewed and removed here, from the webhook's own endpoint (release 0.5.0). Owner only.",
  input: z.object({
    webhook_id: webhookId,
    route_id: z
      .string()
      .regex(/^rt_[a-z2-7]{20}$/)
      .describe('The route id (rt_...).'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  run: (ctx, args) => saveRouting(ctx, args.webhook_id, { kind: 'remove_route', routeId: args.route_id }),
});
