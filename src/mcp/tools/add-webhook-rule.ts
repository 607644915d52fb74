import { z } from 'zod';
import { randomBase32 } from '../../ids.ts';
import { ruleId, ruleSource, saveRouting, webhookId } from './rules-support.ts';
import { defineTool } from './types.ts';

export const addWebhookRule = defineTool({
  name: 'add_webhook_rule',
  title: 'Add a webhook rule',
  description:
    "Inserts a rule into a webhook's list (default: at the end). Passes the save dry run or is refused with rules_rejected. Owner only.",
  input: z.object({
    webhook_id: webhookId,
    source: ruleSource,
    id: ruleId.optional().describe('The rule id (default: a new one).'),
    position: z.number().int().min(0).max(49).optional().describe('0-based position (default: last).'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  run: (ctx, args) =>
    saveRouting(ctx, args.webhook_id, {
      kind: 'add_rule',
      rule: { id: args.id ?? `rule-${randomBase32(8)}`, source: args.source },
      position: args.position,
    }),
});
