import { z } from 'zod';
import { ok } from '../result.ts';
import { loadOwned, presentRouting, webhookId } from './rules-support.ts';
import { defineTool } from './types.ts';

export const listWebhookRoutes = defineTool({
  name: 'list_webhook_routes',
  title: 'List webhook routes',
  description:
    "A webhook's routes: when no rule decides, the first route whose event_type matches (null: any) names the queue; otherwise the webhook's default queue. Owner only.",
  input: z.object({ webhook_id: webhookId }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(ctx, args) {
    const { state } = await loadOwned(ctx, args.webhook_id);
    const { routes, default_queue } = presentRouting(args.webhook_id, state);
    return ok({ webhook_id: args.webhook_id, routes, default_queue });
  },
});
