import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import {
  type DryRunReport,
  type RuleDelivery,
  type RuleSource,
  toRuleDelivery,
} from '../../../rules-sandbox/index.ts';
import { expectedFrom } from '../../domain/endpoint/aggregate.ts';
import { QUARANTINE } from '../../domain/endpoint/queue.ts';
import { webhookStream } from '../../domain/webhook/decide.ts';
import {
  applyAll,
  assertOwner,
  decideRouting,
  type RoutingCommand,
  type RoutingState,
} from '../../domain/webhook/rules.ts';
import { HooklineError, isHooklineError } from '../../errors.ts';
import { jsonEvent } from '../../eventstore/codec.ts';
import { isWrongExpectedVersion } from '../../eventstore/port.ts';
import { loadRouting } from '../../routing/load.ts';
import { settle } from '../../routing/router.ts';
import { failure, ok } from '../result.ts';
import type { ToolContext } from './types.ts';

/** The save dry run looks at this many of the webhook's most recent deliveries (spec 8). */
export const DRY_RUN_DELIVERIES = 50;

export const webhookId = z
  .string()
  .regex(/^wh_[a-z2-7]{20}$/, 'a webhook id looks like wh_ followed by 20 base32 characters')
  .describe('The webhook (wh_...); only the endpoint that owns it may manage its rules and routes.');

export const ruleId = z.string().min(1).max(128).describe('The rule id (unique within the webhook).');

export const ruleSource = z
  .string()
  .min(1)
  .max(8192)
  .describe(
    "A JavaScript function expression of the delivery returning { route: 'queue' }, { drop: true }, { quarantine: true } or 'continue' (rules-sandbox/rules.d.ts).",
  );

/** The webhook as its owner sees it; any other endpoint hears not_found (release 0.5.0). */
export async function loadOwned(ctx: ToolContext, id: string) {
  const loaded = await loadRouting(ctx.services.runtime.store, id);
  assertOwner(loaded.state, { endpointId: ctx.endpoint.id, slug: ctx.endpoint.slug });
  return loaded;
}

export interface RecentDelivery {
  readonly eventId: number;
  readonly delivery: RuleDelivery;
}

/** The webhook's most recent deliveries as rules see them, newest first (from the log read model). */
export async function recentDeliveries(
  ctx: ToolContext,
  id: string,
  options: { readonly eventId?: number; readonly limit?: number } = {},
): Promise<RecentDelivery[]> {
  let q = ctx.services.runtime.db
    .selectFrom('log_events')
    .select(['id', 'provider', 'event_type', 'content_type', 'headers', 'payload', 'received_at'])
    .where('provider', '=', `webhook:${id}`);
  if (options.eventId !== undefined) q = q.where('id', '=', options.eventId);
  const rows = await q
    .orderBy('id', 'desc')
    .limit(options.limit ?? DRY_RUN_DELIVERIES)
    .execute();
  return rows.map((r) => ({
    eventId: Number(r.id),
    delivery: toRuleDelivery(
      {
        provider: r.provider,
        event_type: r.event_type,
        content_type: r.content_type,
        headers: r.headers,
        received_at: new Date(r.received_at).toISOString(),
      },
      r.payload,
    ),
  }));
}

/** Outcomes as the owner reads them: what each delivery would become (disposition and queue). */
export function presentDryRun(
  report: DryRunReport,
  deliveries: readonly RecentDelivery[],
  state: RoutingState,
  ownerQueues: readonly string[],
) {
  const fallback = (d: RuleDelivery) =>
    state.webhook.status === 'active'
      ? (state.routes.find((r) => r.event_type === null || r.event_type === d.event_type)?.queue ??
        state.webhook.queue)
      : null;
  return {
    compile: report.compile.map((p) => ({ rule: p.rule, message: p.message })),
    outcomes: report.outcomes.map((outcome, i) => {
      const d = deliveries[i]!;
      const settled = settle(outcome, fallback(d.delivery), ownerQueues, state.version);
      return {
        event_id: d.eventId,
        disposition: settled.disposition?.disposition ?? null,
        queue: settled.queue,
        rule: settled.disposition?.rule ?? null,
        reason: settled.disposition?.reason ?? null,
        message: settled.disposition?.message ?? null,
      };
    }),
  };
}

const ownerQueues = (ctx: ToolContext) => ctx.endpoint.queues.filter((q) => q !== QUARANTINE);

function rejected(message: string, details: Record<string, unknown>): CallToolResult {
  const result = failure('rules_rejected', message);
  return { ...result, structuredContent: { ...result.structuredContent, ...details } };
}

/**
 * A rule or route change: decide on the owner's webhook, judge the resulting rule list with the
 * save dry run (it must compile and fault on none of the webhook's 50 most recent deliveries),
 * then append at the revision read. A refusal lists the faulting cases and stores nothing.
 */
export async function saveRouting(
  ctx: ToolContext,
  id: string,
  command: RoutingCommand,
): Promise<CallToolResult> {
  const { store, clock, rules } = ctx.services.runtime;
  const { state, revision } = await loadOwned(ctx, id);
  const events = decideRouting(
    command,
    state,
    { endpointId: ctx.endpoint.id, slug: ctx.endpoint.slug },
    clock.now(),
  );
  const next = applyAll(state, events);
  const rulesChanged = events.some((e) => e.type.startsWith('WebhookRule'));
  if (rulesChanged && next.rules.length > 0) {
    const deliveries = await recentDeliveries(ctx, id);
    let report: DryRunReport;
    try {
      report = await rules.dryRun(
        next.rules as RuleSource[],
        deliveries.map((d) => d.delivery),
      );
    } catch (err) {
      if (isHooklineError(err) && err.code === 'sandbox_unavailable') {
        return failure('sandbox_unavailable', 'the rule sandbox cannot run, so no rule can be saved now');
      }
      throw err;
    }
    const shown = presentDryRun(report, deliveries, next, ownerQueues(ctx));
    const faulting = shown.outcomes.filter((o) => o.disposition === 'faulted');
    if (report.compile.length > 0) {
      return rejected('the rules do not compile; nothing was saved', { compile: shown.compile, faults: [] });
    }
    if (faulting.length > 0) {
      return rejected(
        `the rules fault on ${faulting.length} of the webhook's ${deliveries.length} most recent deliveries; nothing was saved`,
        { compile: [], faults: faulting },
      );
    }
  }
  try {
    await store.append(
      webhookStream(id),
      events.map((e) => jsonEvent(e.type, e.data)),
      { expectedRevision: expectedFrom(revision) },
    );
  } catch (err) {
    if (isWrongExpectedVersion(err)) {
      throw new HooklineError('conflict', 'the rules changed meanwhile; read them again and retry');
    }
    throw err;
  }
  return ok(presentRouting(id, next));
}

export function presentRouting(id: string, state: RoutingState) {
  return {
    webhook_id: id,
    version: state.version,
    rules: state.rules.map((r, position) => ({ id: r.id, position, source: r.source })),
    routes: state.routes.map((r) => ({ route_id: r.route_id, queue: r.queue, event_type: r.event_type })),
    default_queue: state.webhook.status === 'active' ? state.webhook.queue : null,
  };
}
