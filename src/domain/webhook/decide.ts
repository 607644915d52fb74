import { DomainError } from '../errors.ts';
import { QUARANTINE } from '../queue.ts';
import type { Decider } from '../shared.ts';
import {
  type Disposition,
  type DispositionReason,
  type RulesAndRoutesEvent,
  type SecretEvent,
  type SigningScheme,
  type StoredRoute,
  type StoredRule,
  WEBHOOK_EVENT_TYPES,
  type WebhookEvent,
} from './events.ts';
import { MAX_ROUTES, type Outcome, routeQueueProblem, structuralProblems } from './rules.ts';
import {
  type ActiveWebhook,
  evolveWebhook,
  initialWebhookState,
  insertAt,
  type WebhookState,
} from './state.ts';

/** Path of an endpoint webhook's ingest URL, `{base_url}/webhooks/w/<token>` (release 0.3.0). */
export const ingestUrl = (baseUrl: string, token: string): string => `${baseUrl}/webhooks/w/${token}`;

/**
 * A webhook owned by an endpoint: token trust, routed to one of the owner's queues. The one
 * vended with an endpoint has no signing secret; one made with create_webhook has one, in the
 * same append, so it never exists without its signing rule.
 */
export interface CreateWebhook {
  readonly type: 'CreateWebhook';
  readonly webhookId: string;
  readonly endpointId: string;
  readonly operator: string;
  readonly human: string;
  readonly name: string;
  readonly queue: string;
  readonly tokenHash: string;
  readonly signing?: {
    readonly scheme: SigningScheme;
    readonly secretSealed: string;
    readonly required: boolean;
  };
}

/**
 * The owner starts a secret rotation (`secretSealed` verifies from now on, the current one until
 * `previousExpiresAt`), or ends one (`retire`: the previous secret stops verifying at once).
 */
export type SecretChange =
  | { readonly kind: 'rotate'; readonly secretSealed: string; readonly previousExpiresAt: Date }
  | { readonly kind: 'retire' };

export interface ChangeSecret {
  readonly type: 'ChangeSecret';
  readonly caller: RoutingCaller;
  readonly change: SecretChange;
}

/** The endpoint making the call (release 0.5.0: only the owning endpoint may manage rules). */
export interface RoutingCaller {
  readonly endpointId: string;
  readonly slug: string;
}

export type RoutingChange =
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

export interface ChangeRouting {
  readonly type: 'ChangeRouting';
  readonly caller: RoutingCaller;
  readonly change: RoutingChange;
}

export type WebhookCommand = CreateWebhook | ChangeRouting | ChangeSecret;

function decideCreate(command: CreateWebhook, state: WebhookState, now: Date): WebhookEvent[] {
  if (state.webhook.status !== 'none')
    throw new DomainError('conflict', `webhook ${command.webhookId} exists`);
  if (!/^[0-9a-f]{64}$/.test(command.tokenHash)) throw new Error('token hash must be SHA-256 hex');
  const at = now.toISOString();
  const events: WebhookEvent[] = [
    {
      type: 'WebhookCreated',
      data: {
        webhook_id: command.webhookId,
        endpoint_id: command.endpointId,
        operator: command.operator,
        name: command.name,
        queue: command.queue,
        trust_mode: 'token',
        token_hash: command.tokenHash,
        created_by: command.human,
        created_at: at,
      },
    },
  ];
  if (command.signing) {
    events.push({
      type: 'WebhookSigningSecretSet',
      data: {
        webhook_id: command.webhookId,
        scheme: command.signing.scheme,
        secret_sealed: command.signing.secretSealed,
        required: command.signing.required,
        set_at: at,
      },
    });
  }
  return events;
}

/**
 * The owner check (spec 7, release 0.5.0): any endpoint but the owner hears `not_found`, exactly
 * as for a webhook that does not exist, so a caller learns nothing about others' webhooks.
 */
export function assertOwner(
  state: WebhookState,
  caller: RoutingCaller,
): asserts state is WebhookState & { webhook: ActiveWebhook } {
  if (state.webhook.status !== 'active' || state.webhook.endpointId !== caller.endpointId) {
    throw new DomainError('not_found', 'this endpoint owns no webhook with that id');
  }
}

function checkList(rules: readonly StoredRule[]): void {
  const problems = structuralProblems(rules);
  if (problems.length > 0) {
    throw new DomainError(
      'bad_request',
      problems.map((p) => `rule ${p.rule.index} (${JSON.stringify(p.rule.id)}): ${p.message}`).join('; '),
    );
  }
}

const findRule = (state: WebhookState, ruleId: string): StoredRule => {
  const rule = state.rules.find((r) => r.id === ruleId);
  if (!rule) throw new DomainError('not_found', `the webhook has no rule ${JSON.stringify(ruleId)}`);
  return rule;
};

/**
 * Rule and route decisions. Structure is judged here (limits, ids, queues); whether the new list
 * compiles and survives the recent deliveries (the save dry run) needs the sandbox and is judged
 * by the caller on the list these events produce (`applyAll`), before appending them.
 */
export function decideRouting(
  change: RoutingChange,
  state: WebhookState,
  caller: RoutingCaller,
  now: Date,
): RulesAndRoutesEvent[] {
  assertOwner(state, caller);
  const stamp = { webhook_id: state.webhook.id, by: `endpoint:${caller.slug}`, at: now.toISOString() };
  const version = state.version + 1;
  switch (change.kind) {
    case 'set_rules': {
      checkList(change.rules);
      const rules = change.rules.map((r) => ({ id: r.id, source: r.source }));
      return [{ type: 'WebhookRulesSet', data: { ...stamp, version, rules } }];
    }
    case 'add_rule': {
      const position = change.position ?? state.rules.length;
      if (position < 0 || position > state.rules.length) {
        throw new DomainError('bad_request', `position must be 0 to ${state.rules.length}`);
      }
      checkList(insertAt(state.rules, position, change.rule));
      const rule = { id: change.rule.id, source: change.rule.source };
      return [{ type: 'WebhookRuleAdded', data: { ...stamp, version, rule, position } }];
    }
    case 'update_rule': {
      findRule(state, change.ruleId);
      checkList(state.rules.map((r) => (r.id === change.ruleId ? { id: r.id, source: change.source } : r)));
      return [
        {
          type: 'WebhookRuleUpdated',
          data: { ...stamp, version, rule_id: change.ruleId, source: change.source },
        },
      ];
    }
    case 'move_rule': {
      findRule(state, change.ruleId);
      if (change.position < 0 || change.position >= state.rules.length) {
        throw new DomainError('bad_request', `position must be 0 to ${state.rules.length - 1}`);
      }
      return [
        {
          type: 'WebhookRuleMoved',
          data: { ...stamp, version, rule_id: change.ruleId, position: change.position },
        },
      ];
    }
    case 'remove_rule':
      findRule(state, change.ruleId);
      return [{ type: 'WebhookRuleRemoved', data: { ...stamp, version, rule_id: change.ruleId } }];
    case 'add_route': {
      const { route } = change;
      const problem = routeQueueProblem(route.queue);
      if (problem) throw new DomainError('bad_request', problem, { field: 'queue' });
      if (route.queue === QUARANTINE || !change.ownerQueues.includes(route.queue)) {
        throw new DomainError(
          'bad_request',
          `queue ${route.queue} is outside the owning endpoint's scope (${change.ownerQueues.join(', ')})`,
          { field: 'queue' },
        );
      }
      if (state.routes.length >= MAX_ROUTES) {
        throw new DomainError('bad_request', `a webhook has at most ${MAX_ROUTES} routes`);
      }
      if (state.routes.some((r) => r.route_id === route.route_id)) {
        throw new DomainError('conflict', `route ${route.route_id} exists`);
      }
      return [{ type: 'WebhookRouteAdded', data: { ...stamp, ...route } }];
    }
    case 'remove_route':
      if (!state.routes.some((r) => r.route_id === change.routeId)) {
        throw new DomainError('not_found', `the webhook has no route ${JSON.stringify(change.routeId)}`);
      }
      return [{ type: 'WebhookRouteRemoved', data: { ...stamp, route_id: change.routeId } }];
    default: {
      const never: never = change;
      return never;
    }
  }
}

/** Rotation and retirement of the signing secret; owner only, like the rules. */
export function decideSecret(
  change: SecretChange,
  state: WebhookState,
  caller: RoutingCaller,
  now: Date,
): SecretEvent[] {
  assertOwner(state, caller);
  if (!state.signing) {
    throw new DomainError(
      'bad_request',
      'this webhook has no signing secret (scheme none): its URL is its only credential',
    );
  }
  const stamp = { webhook_id: state.webhook.id, by: `endpoint:${caller.slug}`, at: now.toISOString() };
  switch (change.kind) {
    case 'rotate':
      return [
        {
          type: 'WebhookSecretRotated',
          data: {
            ...stamp,
            secret_sealed: change.secretSealed,
            previous_expires_at: change.previousExpiresAt.toISOString(),
          },
        },
      ];
    case 'retire': {
      const previous = state.signing.previous;
      if (!previous || previous.expiresAt.getTime() <= now.getTime()) return [];
      return [{ type: 'WebhookPreviousSecretRetired', data: stamp }];
    }
    default: {
      const never: never = change;
      return never;
    }
  }
}

export function decideWebhook(command: WebhookCommand, state: WebhookState, now: Date): WebhookEvent[] {
  switch (command.type) {
    case 'CreateWebhook':
      return decideCreate(command, state, now);
    case 'ChangeRouting':
      return decideRouting(command.change, state, command.caller, now);
    case 'ChangeSecret':
      return decideSecret(command.change, state, command.caller, now);
    default: {
      const never: never = command;
      return never;
    }
  }
}

export const webhookDecider: Decider<WebhookCommand, WebhookState, WebhookEvent> = {
  initialState: initialWebhookState,
  evolve: evolveWebhook,
  decide: decideWebhook,
  eventTypes: WEBHOOK_EVENT_TYPES,
};

/** What became of a delivery: the queue of its todo (null: none) and the disposition to record. */
export interface Settled {
  readonly queue: string | null;
  readonly disposition: {
    readonly disposition: Disposition;
    readonly rule: { readonly id: string; readonly index: number } | null;
    readonly reason: DispositionReason | null;
    readonly message: string | null;
    readonly rulesVersion: number;
  };
}

/**
 * The sandbox's outcome as a queue and a disposition. A rule that routes to a queue its owner
 * does not drain faults (`scope`); a fault or a hold puts the delivery in `quarantine`.
 */
export function decideDisposition(
  outcome: Outcome,
  fallback: string | null,
  ownerQueues: readonly string[],
  rulesVersion: number,
): Settled {
  const decided = (
    disposition: Disposition,
    queue: string | null,
    rule: { id: string; index: number } | null,
  ): Settled => ({
    queue,
    disposition: { disposition, rule, reason: null, message: null, rulesVersion },
  });
  switch (outcome.kind) {
    case 'routed':
      if (!ownerQueues.includes(outcome.queue)) {
        return {
          queue: QUARANTINE,
          disposition: {
            disposition: 'faulted',
            rule: outcome.rule,
            reason: 'scope',
            message: `rule ${outcome.rule.id} routed to ${outcome.queue}, which the owning endpoint does not drain`,
            rulesVersion,
          },
        };
      }
      return decided('routed', outcome.queue, outcome.rule);
    case 'dropped':
      return decided('dropped', null, outcome.rule);
    case 'held':
      return decided('held', QUARANTINE, outcome.rule);
    case 'default':
      return fallback === null ? decided('dropped', null, null) : decided('routed', fallback, null);
    case 'faulted':
      return {
        queue: QUARANTINE,
        disposition: {
          disposition: 'faulted',
          rule: outcome.rule,
          reason: outcome.reason,
          message: outcome.message,
          rulesVersion,
        },
      };
    default: {
      const never: never = outcome;
      return never;
    }
  }
}
