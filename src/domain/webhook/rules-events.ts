/**
 * Rule and route events on the webhook's own stream `webhook-<id>` (release 0.4.0/0.5.0). The
 * webhook aggregate of decide.ts skips these types; src/domain/webhook/rules.ts folds them. Every
 * rule event carries the list's new `version` (1, 2, …): a disposition names the version that
 * decided it, and the save dry run is judged against exactly that list.
 */
export interface StoredRule {
  readonly id: string;
  /** A JavaScript function expression (rules-sandbox/README.md). */
  readonly source: string;
}

/**
 * A route: a declarative target the webhook's default uses. When no rule decides (or there are
 * no rules), the first route whose `event_type` matches the delivery (null matches any) names
 * the queue; with no matching route, the webhook's own queue.
 */
export interface StoredRoute {
  readonly route_id: string;
  readonly queue: string;
  readonly event_type: string | null;
}

interface Stamp {
  readonly webhook_id: string;
  /** `endpoint:<slug>` of the caller, or `upgrade` for events written by a migration. */
  readonly by: string;
  readonly at: string;
}

export type RuleEvent =
  | {
      readonly type: 'WebhookRulesSet';
      readonly data: Stamp & { readonly version: number; readonly rules: readonly StoredRule[] };
    }
  | {
      readonly type: 'WebhookRuleAdded';
      readonly data: Stamp & {
        readonly version: number;
        readonly rule: StoredRule;
        readonly position: number;
      };
    }
  | {
      readonly type: 'WebhookRuleUpdated';
      readonly data: Stamp & { readonly version: number; readonly rule_id: string; readonly source: string };
    }
  | {
      readonly type: 'WebhookRuleMoved';
      readonly data: Stamp & {
        readonly version: number;
        readonly rule_id: string;
        readonly position: number;
      };
    }
  | {
      readonly type: 'WebhookRuleRemoved';
      readonly data: Stamp & { readonly version: number; readonly rule_id: string };
    };

export type RouteEvent =
  | { readonly type: 'WebhookRouteAdded'; readonly data: Stamp & StoredRoute }
  | { readonly type: 'WebhookRouteRemoved'; readonly data: Stamp & { readonly route_id: string } };

export type RulesAndRoutesEvent = RuleEvent | RouteEvent;

export const RULE_EVENT_TYPES: readonly RulesAndRoutesEvent['type'][] = [
  'WebhookRulesSet',
  'WebhookRuleAdded',
  'WebhookRuleUpdated',
  'WebhookRuleMoved',
  'WebhookRuleRemoved',
  'WebhookRouteAdded',
  'WebhookRouteRemoved',
];

export const isRulesEventType = (t: string): t is RulesAndRoutesEvent['type'] =>
  (RULE_EVENT_TYPES as readonly string[]).includes(t);
