import { z } from 'zod';
import { ruleId, ruleSource, saveRouting, webhookId } from './rules-support.ts';
import { defineTool } from './types.ts';

export const updateWebhookRule = defineTool({
  name: 'update_webhook_rule',
  title: 'Update a webhook rule',
  description:
    "Replaces one rule's source, keeping its id and position. Passes the save dry run or is refused with rules_rejected. Owner only.",
  input: z.object({ webhook_id: webhookId, rule_id: ruleId, source: ruleSource }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  run: (ctx, args) =>
    saveRouting(ctx, args.webhook_id, { kind: 'update_rule', ruleId: args.rule_id, source: args.source }),
});
