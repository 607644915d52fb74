import { z } from 'zod';
import { structuralProblems } from '../../domain/webhook/rules.ts';
import { HooklineError, isHooklineError } from '../../errors.ts';
import { ownerQueues, presentDryRun, recentDeliveries } from '../../rules/edit.ts';
import { failure, ok } from '../result.ts';
import { loadOwned, ruleId, ruleSource, webhookId } from './rules-support.ts';
import { defineTool } from './types.ts';

export const testWebhookRules = defineTool({
  name: 'test_webhook_rules',
  title: 'Dry-run webhook rules',
  description:
    "Runs rules (default: the webhook's current list) against one recent delivery (event_id) or the webhook's 50 most recent deliveries, in the sandbox, and reports each outcome (disposition, queue, rule, fault reason). Saves nothing, mints nothing. Owner only.",
  input: z.object({
    webhook_id: webhookId,
    rules: z
      .array(z.object({ id: ruleId, source: ruleSource }))
      .max(50)
      .optional()
      .describe('A candidate list to try instead of the current one.'),
    event_id: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('One delivery of this webhook to try (its event id).'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(ctx, args) {
    const { state } = await loadOwned(ctx, args.webhook_id);
    const candidate = { ...state, rules: args.rules ?? state.rules };
    const structural = structuralProblems(candidate.rules);
    if (structural.length > 0) {
      throw new HooklineError(
        'bad_request',
        structural.map((p) => `rule ${p.rule.index}: ${p.message}`).join('; '),
      );
    }
    const deliveries = await recentDeliveries(
      ctx.services.runtime,
      args.webhook_id,
      args.event_id === undefined ? {} : { eventId: args.event_id, limit: 1 },
    );
    if (args.event_id !== undefined && deliveries.length === 0) {
      throw new HooklineError('not_found', `no delivery ${args.event_id} of this webhook is retained`);
    }
    try {
      const report = await ctx.services.runtime.rules.dryRun(
        candidate.rules,
        deliveries.map((d) => d.delivery),
      );
      const shown = presentDryRun(report, deliveries, candidate, ownerQueues(ctx.endpoint));
      const faults = shown.outcomes.filter((o) => o.disposition === 'faulted');
      return ok({
        webhook_id: args.webhook_id,
        ok: report.compile.length === 0 && faults.length === 0,
        tested: deliveries.length,
        ...shown,
        faults,
      });
    } catch (err) {
      if (isHooklineError(err) && err.code === 'sandbox_unavailable') {
        return failure('sandbox_unavailable', 'the rule sandbox cannot run now');
      }
      throw err;
    }
  },
});
