import { type RuleEngine, type StoredDeliveryView, toRuleDelivery } from '../../rules-sandbox/index.ts';
import type { Clock } from '../clock.ts';
import type { EndpointFacts } from '../domain/endpoint/state.ts';
import { QUARANTINE } from '../domain/queue.ts';
import { decideDisposition } from '../domain/webhook/decide.ts';
import { type Disposition, type DispositionReason, dispositionStream } from '../domain/webhook/events.ts';
import { defaultQueue, type WebhookState } from '../domain/webhook/state.ts';
import { HooklineError } from '../errors.ts';
import type { EventStore } from '../eventstore/port.ts';
import { ruleEvaluations, ruleFaults } from '../metrics/instruments.ts';
import type { DeliveryFact } from '../todos/hand-off.ts';
import { loadWebhook } from '../webhooks/load.ts';

/**
 * Where one delivery on an endpoint webhook goes, decided before the delivery is recorded, so a
 * sandbox that cannot run answers 503 while nothing has been stored or acknowledged.
 * `queue` null: dropped (no todo). `disposition` null: the webhook has no rules, and nothing
 * beyond today's todo is recorded.
 */
export interface RoutingPlan {
  readonly webhookId: string;
  readonly endpointId: string;
  readonly operator: string;
  readonly queue: string | null;
  readonly disposition: null | {
    readonly disposition: Disposition;
    readonly rule: { readonly id: string; readonly index: number } | null;
    readonly reason: DispositionReason | null;
    readonly message: string | null;
    readonly rulesVersion: number;
  };
}

export interface RouteInput {
  readonly webhookId: string;
  /** The owning endpoint, as the receiver loaded it. */
  readonly endpoint: EndpointFacts;
  /** The delivery as it will be stored (headers sanitized, received_at the one recorded). */
  readonly view: StoredDeliveryView;
  readonly body: Uint8Array;
  /** The webhook as the receiver just read it; read here when absent. */
  readonly webhook?: WebhookState;
}

export interface WebhookRouter {
  plan(input: RouteInput): Promise<RoutingPlan>;
  /**
   * The disposition of a planned delivery, a fact appended with its hand-off (src/todos/hand-off.ts);
   * null for a webhook without rules.
   */
  disposition(plan: RoutingPlan, todoId: string | null): DeliveryFact | null;
}

const drains = (endpoint: EndpointFacts): string[] => endpoint.queues.filter((q) => q !== QUARANTINE);

export function createWebhookRouter(deps: {
  readonly store: EventStore;
  readonly clock: Clock;
  readonly engine: RuleEngine;
}): WebhookRouter {
  const { store, clock, engine } = deps;

  async function plan(input: RouteInput): Promise<RoutingPlan> {
    const state = input.webhook ?? (await loadWebhook(store, input.webhookId)).state;
    const base = {
      webhookId: input.webhookId,
      endpointId: input.endpoint.id,
      operator: input.endpoint.operator,
    };
    const fallback = defaultQueue(state, input.view.event_type, drains(input.endpoint));
    if (state.rules.length === 0) return { ...base, queue: fallback, disposition: null };
    // Fail closed (spec 9, 0.4.0 item 5): no sandbox, no delivery. There is no switch.
    if (engine.health() === 'unavailable') {
      throw new HooklineError('sandbox_unavailable', 'the rule sandbox cannot run; try again later');
    }
    const outcome = await engine.evaluate(state.rules, toRuleDelivery(input.view, input.body));
    ruleEvaluations.inc({ outcome: outcome.kind });
    if (outcome.kind === 'faulted') ruleFaults.inc({ reason: outcome.reason });
    return { ...base, ...decideDisposition(outcome, fallback, drains(input.endpoint), state.version) };
  }

  function disposition(p: RoutingPlan, todoId: string | null): DeliveryFact | null {
    if (!p.disposition) return null;
    return {
      streamId: dispositionStream(p.webhookId),
      event: {
        type: 'DeliveryDisposed',
        data: {
          event_id: 0, // the delivery's, written in by the hand-off
          webhook_id: p.webhookId,
          endpoint_id: p.endpointId,
          operator: p.operator,
          disposition: p.disposition.disposition,
          queue: p.queue,
          todo_id: todoId,
          rule: p.disposition.rule,
          reason: p.disposition.reason,
          message: p.disposition.message,
          rules_version: p.disposition.rulesVersion,
          disposed_at: clock.now().toISOString(),
        },
      },
    };
  }

  return { plan, disposition };
}
