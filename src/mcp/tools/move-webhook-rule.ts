import { z } from 'zod';
import { ruleId, saveRouting, webhookId } from './rules-support.ts';
import { defineTool } from './types.ts';

export const moveWebhookRule = defineTool({
  name: 'move_webhook_rule',
  title: 'Move a webhook rule',
  description:
    'Moves one rule to a new 0-based position in the evaluation order. Passes the save dry run or is refused with rules_rejected. Owner only.',
  input: z.object({
    webhook_id: webhookId,
    rule_id: ruleId,
    position: z.number().int().min(0).max(49).describe('The new 0-based position.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: (ctx, args) =>
    saveRouting(ctx, args.webhook_id, { kind: 'move_rule', ruleId: args.rule_id, position: args.position }),
});
