import { type DryRunReport, type RuleDelivery, toRuleDelivery } from '../../rules-sandbox/index.ts';
import type { CommandDeps } from '../commands/handle-command.ts';
import { handleCommand } from '../commands/handle-command.ts';
import type { DB } from '../db/database.ts';
import { type DeliveryReadDeps, recentWebhookDeliveriesWithBytes } from '../deliveries/read.ts';
import type { EndpointFacts } from '../domain/endpoint/state.ts';
import { QUARANTINE } from '../domain/queue.ts';
import {
  assertOwner,
  decideDisposition,
  decideRouting,
  type RoutingChange,
  webhookDecider,
} from '../domain/webhook/decide.ts';
import { webhookStream } from '../domain/webhook/events.ts';
import type { RuleSource } from '../domain/webhook/rules.ts';
import { applyAll, type WebhookState } from '../domain/webhook/state.ts';
import { asHooklineError } from '../errors.ts';
import { loadWebhook } from '../webhooks/load.ts';

/** The save dry run looks at this many of the webhook's most recent deliveries (spec 8). */
export const DRY_RUN_DELIVERIES = 50;

export interface RulesDeps extends CommandDeps {
  readonly db: DB;
  readonly rules: {
    dryRun(rules: readonly RuleSource[], deliveries: readonly RuleDelivery[]): Promise<DryRunReport>;
  };
}

/** The webhook as its owner sees it; any other endpoint hears not_found (release 0.5.0). */
export async function loadOwned(deps: CommandDeps, owner: EndpointFacts, webhookId: string) {
  const loaded = await loadWebhook(deps.store, webhookId);
  assertOwner(loaded.state, { endpointId: owner.id, slug: owner.slug });
  return loaded;
}

export interface RecentDelivery {
  readonly eventId: number;
  readonly delivery: RuleDelivery;
}

/** The webhook's most recent deliveries as rules see them, newest first (the log read model's rows, their events' bytes). */
export async function recentDeliveries(
  deps: DeliveryReadDeps,
  webhookId: string,
  options: { readonly eventId?: number; readonly limit?: number } = {},
): Promise<RecentDelivery[]> {
  const rows = await recentWebhookDeliveriesWithBytes(deps, webhookId, {
    eventId: options.eventId,
    limit: options.limit ?? DRY_RUN_DELIVERIES,
  });
  return rows.map((r) => ({
    eventId: r.id,
    delivery: toRuleDelivery(
      {
        provider: r.provider,
        event_type: r.event_type,
        content_type: r.content_type,
        headers: r.headers,
        received_at: r.received_at,
      },
      r.payload,
    ),
  }));
}

/** Outcomes as the owner reads them: what each delivery would become (disposition and queue). */
export function presentDryRun(
  report: DryRunReport,
  deliveries: readonly RecentDelivery[],
  state: WebhookState,
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
      const settled = decideDisposition(outcome, fallback(d.delivery), ownerQueues, state.version);
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

export const ownerQueues = (owner: EndpointFacts): string[] => owner.queues.filter((q) => q !== QUARANTINE);

export type SaveOutcome =
  | { readonly kind: 'saved'; readonly state: WebhookState }
  | { readonly kind: 'sandbox_unavailable' }
  | {
      readonly kind: 'rejected';
      readonly message: string;
      readonly compile: ReturnType<typeof presentDryRun>['compile'];
      readonly faults: ReturnType<typeof presentDryRun>['outcomes'];
    };

/**
 * A rule or route change: decide on the owner's webhook, judge the resulting rule list with the
 * save dry run (it must compile and fault on none of the webhook's 50 most recent deliveries),
 * then append at the revision read. A refusal lists the faulting cases and stores nothing; a
 * change that lost a race to another is refused too (the owner reads the rules again).
 */
export async function saveRouting(
  deps: RulesDeps,
  owner: EndpointFacts,
  webhookId: string,
  change: RoutingChange,
): Promise<SaveOutcome> {
  const caller = { endpointId: owner.id, slug: owner.slug };
  let refusal: SaveOutcome | undefined;
  const result = await handleCommand(
    deps,
    webhookStream(webhookId),
    webhookDecider,
    async (state, now) => {
      const events = decideRouting(change, state, caller, now);
      const next = applyAll(state, events);
      const rulesChanged = events.some((e) => e.type.startsWith('WebhookRule'));
      if (!rulesChanged || next.rules.length === 0) return events;
      const deliveries = await recentDeliveries(deps, webhookId);
      let report: DryRunReport;
      try {
        report = await deps.rules.dryRun(
          next.rules,
          deliveries.map((d) => d.delivery),
        );
      } catch (err) {
        if (asHooklineError(err)?.code === 'sandbox_unavailable') {
          refusal = { kind: 'sandbox_unavailable' };
          return [];
        }
        throw err;
      }
      const shown = presentDryRun(report, deliveries, next, ownerQueues(owner));
      const faulting = shown.outcomes.filter((o) => o.disposition === 'faulted');
      if (report.compile.length > 0) {
        refusal = {
          kind: 'rejected',
          message: 'the rules do not compile; nothing was saved',
          compile: shown.compile,
          faults: [],
        };
        return [];
      }
      if (faulting.length > 0) {
        refusal = {
          kind: 'rejected',
          message: `the rules fault on ${faulting.length} of the webhook's ${deliveries.length} most recent deliveries; nothing was saved`,
          compile: [],
          faults: faulting,
        };
        return [];
      }
      return events;
    },
    { retries: 0, conflictMessage: 'the rules changed meanwhile; read them again and retry' },
  );
  return refusal ?? { kind: 'saved', state: result.state };
}

/** The rules and routes as the owner reads them. */
export function presentRouting(webhookId: string, state: WebhookState) {
  return {
    webhook_id: webhookId,
    version: state.version,
    rules: state.rules.map((r, position) => ({ id: r.id, position, source: r.source })),
    routes: state.routes.map((r) => ({ route_id: r.route_id, queue: r.queue, event_type: r.event_type })),
    default_queue: state.webhook.status === 'active' ? state.webhook.queue : null,
  };
}
