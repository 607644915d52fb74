import { z } from 'zod';
import { ruleId, saveRouting, webhookId } from './rules-support.ts';
import { defineTool } from './types.ts';

export const removeWebhookRule = defineTool({
  name: 'remove_webhook_rule',
  title: 'Remove a webhook rule',
  description:
    'Removes one rule. The remaining list passes the save dry run or the removal is refused with rules_rejected. Owner only.',
  input: z.object({ webhook_id: webhookId, rule_id: ruleId }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  run: (ctx, args) => saveRouting(ctx, args.webhook_id, { kind: 'remove_rule', ruleId: args.rule_id }),
});
