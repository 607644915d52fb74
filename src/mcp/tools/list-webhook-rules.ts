import { z } from 'zod';
import { ok } from '../result.ts';
import { loadOwned, presentRouting, webhookId } from './rules-support.ts';
import { defineTool } from './types.ts';

export const listWebhookRules = defineTool({
  name: 'list_webhook_rules',
  title: 'List webhook rules',
  description:
    "A webhook's ordered routing rules with their version, its routes and its default queue. Only the endpoint that owns the webhook may call this; any other gets not_found.",
  input: z.object({ webhook_id: webhookId }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(ctx, args) {
    const { state } = await loadOwned(ctx, args.webhook_id);
    return ok(presentRouting(args.webhook_id, state));
  },
});
