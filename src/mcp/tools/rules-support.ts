import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { RoutingChange } from '../../domain/webhook/decide.ts';
import { RULE_LIMITS } from '../../domain/webhook/rules.ts';
import { loadOwned as loadOwnedWebhook, presentRouting, saveRouting as save } from '../../rules/edit.ts';
import { failure, ok } from '../result.ts';
import type { ToolContext } from './types.ts';

export const webhookId = z
  .string()
  .regex(/^wh_[a-z2-7]{20}$/, 'a webhook id looks like wh_ followed by 20 base32 characters')
  .describe('The webhook (wh_...); only the endpoint that owns it may manage its rules and routes.');

export const ruleId = z
  .string()
  .min(1)
  .max(RULE_LIMITS.maxIdLength)
  .describe('The rule id (unique within the webhook).');

export const ruleSource = z
  .string()
  .min(1)
  .max(RULE_LIMITS.maxSourceLength)
  .describe(
    "A JavaScript function expression of the delivery returning { route: 'queue' }, { drop: true }, { quarantine: true } or 'continue' (rules-sandbox/rules.d.ts).",
  );

/** The webhook as this endpoint, its owner, sees it; any other endpoint hears not_found. */
export const loadOwned = (ctx: ToolContext, id: string) =>
  loadOwnedWebhook(ctx.services.runtime, ctx.endpoint, id);

/** A rule or route change through the rules feature, as the tool's result. */
export async function saveRouting(
  ctx: ToolContext,
  id: string,
  change: RoutingChange,
): Promise<CallToolResult> {
  const outcome = await save(ctx.services.runtime, ctx.endpoint, id, change);
  switch (outcome.kind) {
    case 'saved':
      return ok(presentRouting(id, outcome.state));
    case 'sandbox_unavailable':
      return failure('sandbox_unavailable', 'the rule sandbox cannot run, so no rule can be saved now');
    case 'rejected': {
      const result = failure('rules_rejected', outcome.message);
      return {
        ...result,
        structuredContent: { ...result.structuredContent, compile: outcome.compile, faults: outcome.faults },
      };
    }
    default: {
      const never: never = outcome;
      return never;
    }
  }
}

export { presentRouting };
