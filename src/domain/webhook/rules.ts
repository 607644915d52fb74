import { RULE_LIMITS, routeQueueProblem, structuralProblems } from '../../../rules-sandbox/index.ts';
import { HooklineError } from '../../errors.ts';
import { QUARANTINE } from '../endpoint/queue.ts';
import { evolveWebhook, initialWebhookState, type WebhookState } from './decide.ts';
import { isWebhookEventType, type WebhookEvent } from './events.ts';
import {
  isRulesEventType,
  type RulesAndRoutesEvent,
  type StoredRoute,
  type StoredRule,
} from './rules-events.ts';

/** The webhook as routing sees it: the aggregate, plus its rule list (with version) and routes. */
export interface RoutingState {
  readonly webhook: WebhookState;
  /** 0 before any rule event; every rule event moves it to the version it carries. */
  readonly version: number;
  readonly rules: readonly StoredRule[];
  readonly routes: readonly StoredRoute[];
}

export const initialRoutingState: RoutingState = {
  webhook: initialWebhookState,
  version: 0,
  rules: [],
  routes: [],
};

export const MAX_ROUTES = 50;

export type RoutingStreamEvent = WebhookEvent | RulesAndRoutesEvent;

export const isRoutingEventType = (t: string): t is RoutingStreamEvent['type'] =>
  isWebhookEventType(t) || isRulesEventType(t);

const insertAt = <T>(list: readonly T[], position: number, item: T): T[] => {
  const copy = [...list];
  copy.splice(Math.max(0, Math.min(position, copy.length)), 0, item);
  return copy;
};

export function evolveRouting(state: RoutingState, event: RoutingStreamEvent): RoutingState {
  switch (event.type) {
    case 'WebhookCreated':
      return { ...state, webhook: evolveWebhook(state.webhook, event) };
    case 'WebhookRulesSet':
      return { ...state, version: event.data.version, rules: event.data.rules };
    case 'WebhookRuleAdded':
      return {
        ...state,
        version: event.data.version,
        rules: insertAt(state.rules, event.data.position, event.data.rule),
      };
    case 'WebhookRuleUpdated': {
      const { rule_id, source } = event.data;
      return {
        ...state,
        version: event.data.version,
        rules: state.rules.map((r) => (r.id === rule_id ? { id: r.id, source } : r)),
      };
    }
    case 'WebhookRuleMoved': {
      const rule = state.rules.find((r) => r.id === event.data.rule_id);
      const rest = state.rules.filter((r) => r.id !== event.data.rule_id);
      return {
        ...state,
        version: event.data.version,
        rules: rule ? insertAt(rest, event.data.position, rule) : rest,
      };
    }
    case 'WebhookRuleRemoved':
      return {
        ...state,
        version: event.data.version,
        rules: state.rules.filter((r) => r.id !== event.data.rule_id),
      };
    case 'WebhookRouteAdded': {
      const { route_id, queue, event_type } = event.data;
      return { ...state, routes: [...state.routes, { route_id, queue, event_type }] };
    }
    case 'WebhookRouteRemoved':
      return { ...state, routes: state.routes.filter((r) => r.route_id !== event.data.route_id) };
    default: {
      const never: never = event;
      return never;
    }
  }
}

/** The endpoint making the call (release 0.5.0: only the owning endpoint may manage rules). */
export interface RoutingCaller {
  readonly endpointId: string;
  readonly slug: string;
}

export type RoutingCommand =
  | { readonly kind: 'set_rules'; readonly rules: readonly StoredRule[] }
  | { readonly kind: 'add_rule'; readonly rule: StoredRule; readonly position: number | undefined }
  | { readonly kind: 'update_rule'; readonly ruleId: string; readonly source: string }
  | { readonly kind: 'move_rule'; readonly ruleId: string; readonly position: number }
  | { readonly kind: 'remove_rule'; readonly ruleId: string }
  | {
      readonly kind: 'add_route';
      readonly route: StoredRoute;
      /** The owning endpoint's queues: a route may only name one of them. */
      readonly ownerQueues: readonly string[];
    }
  | { readonly kind: 'remove_route'; readonly routeId: string };

/**
 * The owner check (spec 7, release 0.5.0): any endpoint but the owner hears `not_found`, exactly
 * as for a webhook that does not exist, so a caller learns nothing about others' webhooks.
 */
export function assertOwner(
  state: RoutingState,
  caller: RoutingCaller,
): asserts state is RoutingState & {
  webhook: Extract<WebhookState, { status: 'active' }>;
} {
  if (state.webhook.status !== 'active' || state.webhook.endpointId !== caller.endpointId) {
    throw new HooklineError('not_found', 'this endpoint owns no webhook with that id');
  }
}

function checkList(rules: readonly StoredRule[]): void {
  const problems = structuralProblems(rules);
  if (problems.length > 0) {
    throw new HooklineError(
      'bad_request',
      problems.map((p) => `rule ${p.rule.index} (${JSON.stringify(p.rule.id)}): ${p.message}`).join('; '),
    );
  }
}

const findRule = (state: RoutingState, ruleId: string): StoredRule => {
  const rule = state.rules.find((r) => r.id === ruleId);
  if (!rule) throw new HooklineError('not_found', `the webhook has no rule ${JSON.stringify(ruleId)}`);
  return rule;
};

/**
 * Rule and route decisions. Structure is judged here (limits, ids, queues); whether the new list
 * compiles and survives the recent deliveries (the save dry run) needs the sandbox and is judged
 * by the caller on the list these events produce (`evolveRouting`), before appending them.
 */
export function decideRouting(
  command: RoutingCommand,
  state: RoutingState,
  caller: RoutingCaller,
  now: Date,
): RulesAndRoutesEvent[] {
  assertOwner(state, caller);
  const stamp = { webhook_id: state.webhook.id, by: `endpoint:${caller.slug}`, at: now.toISOString() };
  const version = state.version + 1;
  switch (command.kind) {
    case 'set_rules': {
      checkList(command.rules);
      const rules = command.rules.map((r) => ({ id: r.id, source: r.source }));
      return [{ type: 'WebhookRulesSet', data: { ...stamp, version, rules } }];
    }
    case 'add_rule': {
      const position = command.position ?? state.rules.length;
      if (position < 0 || position > state.rules.length) {
        throw new HooklineError('bad_request', `position must be 0 to ${state.rules.length}`);
      }
      checkList(insertAt(state.rules, position, command.rule));
      const rule = { id: command.rule.id, source: command.rule.source };
      return [{ type: 'WebhookRuleAdded', data: { ...stamp, version, rule, position } }];
    }
    case 'update_rule': {
      findRule(state, command.ruleId);
      checkList(state.rules.map((r) => (r.id === command.ruleId ? { id: r.id, source: command.source } : r)));
      return [
        {
          type: 'WebhookRuleUpdated',
          data: { ...stamp, version, rule_id: command.ruleId, source: command.source },
        },
      ];
    }
    case 'move_rule': {
      findRule(state, command.ruleId);
      if (command.position < 0 || command.position >= state.rules.length) {
        throw new HooklineError('bad_request', `position must be 0 to ${state.rules.length - 1}`);
      }
      return [
        {
          type: 'WebhookRuleMoved',
          data: { ...stamp, version, rule_id: command.ruleId, position: command.position },
        },
      ];
    }
    case 'remove_rule':
      findRule(state, command.ruleId);
      return [{ type: 'WebhookRuleRemoved', data: { ...stamp, version, rule_id: command.ruleId } }];
    case 'add_route': {
      const { route } = command;
      const problem = routeQueueProblem(route.queue);
      if (problem) throw new HooklineError('bad_request', problem, { field: 'queue' });
      if (route.queue === QUARANTINE || !command.ownerQueues.includes(route.queue)) {
        throw new HooklineError(
          'bad_request',
          `queue ${route.queue} is outside the owning endpoint's scope (${command.ownerQueues.join(', ')})`,
          { field: 'queue' },
        );
      }
      if (state.routes.length >= MAX_ROUTES) {
        throw new HooklineError('bad_request', `a webhook has at most ${MAX_ROUTES} routes`);
      }
      if (state.routes.some((r) => r.route_id === route.route_id)) {
        throw new HooklineError('conflict', `route ${route.route_id} exists`);
      }
      return [{ type: 'WebhookRouteAdded', data: { ...stamp, ...route } }];
    }
    case 'remove_route':
      if (!state.routes.some((r) => r.route_id === command.routeId)) {
        throw new HooklineError('not_found', `the webhook has no route ${JSON.stringify(command.routeId)}`);
      }
      return [{ type: 'WebhookRouteRemoved', data: { ...stamp, route_id: command.routeId } }];
    default: {
      const never: never = command;
      return never;
    }
  }
}

/** The state after `events`: what a save would leave (the dry run judges its rules). */
export const applyAll = (state: RoutingState, events: readonly RoutingStreamEvent[]): RoutingState =>
  events.reduce(evolveRouting, state);

/** The default target: the first route matching the event type, else the webhook's own queue. */
export function defaultQueue(state: RoutingState, eventType: string | null): string | null {
  if (state.webhook.status !== 'active') return null;
  const route = state.routes.find((r) => r.event_type === null || r.event_type === eventType);
  return route?.queue ?? state.webhook.queue;
}

export { RULE_LIMITS };
