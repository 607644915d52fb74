import { z } from 'zod';
import { ruleId, ruleSource, saveRouting, webhookId } from './rules-support.ts';
import { defineTool } from './types.ts';

export const setWebhookRules = defineTool({
  name: 'set_webhook_rules',
  title: 'Replace webhook rules',
  description:
    "Replaces a webhook's whole rule list (empty: no rules, deliveries go to the default queue). Refused with rules_rejected, storing nothing, if the list does not compile or faults on any of the webhook's 50 most recent deliveries (the faulting cases are listed). Owner only.",
  input: z.object({
    webhook_id: webhookId,
    rules: z
      .array(z.object({ id: ruleId, source: ruleSource }))
      .max(50)
      .describe('The rules in evaluation order.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  run: (ctx, args) => saveRouting(ctx, args.webhook_id, { kind: 'set_rules', rules: args.rules }),
});
