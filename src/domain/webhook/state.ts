import type { SigningScheme, StoredRoute, StoredRule, WebhookEvent } from './events.ts';

/** The webhook itself, once created. */
export type WebhookInfo =
  | { readonly status: 'none' }
  | {
      readonly status: 'active';
      readonly id: string;
      readonly endpointId: string;
      readonly operator: string;
      readonly name: string;
      readonly queue: string;
      readonly trustMode: 'token';
      readonly tokenHash: string;
    };

export type ActiveWebhook = Extract<WebhookInfo, { status: 'active' }>;

export interface WebhookSigning {
  readonly scheme: SigningScheme;
  readonly secretSealed: string;
  readonly required: boolean;
  /** During a rotation: the secret it replaced, which verifies until `expiresAt`. */
  readonly previous: { readonly secretSealed: string; readonly expiresAt: Date } | null;
}

/** The sealed secrets that verify at `now`: the current one, then the previous while it lasts. */
export function activeSecrets(signing: WebhookSigning, now: Date): string[] {
  const { previous } = signing;
  return previous && previous.expiresAt.getTime() > now.getTime()
    ? [signing.secretSealed, previous.secretSealed]
    : [signing.secretSealed];
}

/** The webhook aggregate: the webhook, its signing rule, and its rule list (with version) and routes. */
export interface WebhookState {
  readonly webhook: WebhookInfo;
  readonly signing: WebhookSigning | null;
  /** 0 before any rule event; every rule event moves it to the version it carries. */
  readonly version: number;
  readonly rules: readonly StoredRule[];
  readonly routes: readonly StoredRoute[];
}

export const initialWebhookState = (): WebhookState => ({
  webhook: { status: 'none' },
  signing: null,
  version: 0,
  rules: [],
  routes: [],
});

export const insertAt = <T>(list: readonly T[], position: number, item: T): T[] => {
  const copy = [...list];
  copy.splice(Math.max(0, Math.min(position, copy.length)), 0, item);
  return copy;
};

export function evolveWebhook(state: WebhookState, event: WebhookEvent): WebhookState {
  switch (event.type) {
    case 'WebhookCreated': {
      const d = event.data;
      return {
        ...state,
        webhook: {
          status: 'active',
          id: d.webhook_id,
          endpointId: d.endpoint_id,
          operator: d.operator,
          name: d.name,
          queue: d.queue,
          trustMode: d.trust_mode,
          tokenHash: d.token_hash,
        },
      };
    }
    case 'WebhookSigningSecretSet': {
      const d = event.data;
      return {
        ...state,
        signing: { scheme: d.scheme, secretSealed: d.secret_sealed, required: d.required, previous: null },
      };
    }
    case 'WebhookSecretRotated': {
      if (!state.signing) return state;
      const d = event.data;
      return {
        ...state,
        signing: {
          ...state.signing,
          secretSealed: d.secret_sealed,
          previous: { secretSealed: state.signing.secretSealed, expiresAt: new Date(d.previous_expires_at) },
        },
      };
    }
    case 'WebhookPreviousSecretRetired':
      if (!state.signing) return state;
      return { ...state, signing: { ...state.signing, previous: null } };
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

/** The state after `events`: what a save would leave (the dry run judges its rules). */
export const applyAll = (state: WebhookState, events: readonly WebhookEvent[]): WebhookState =>
  events.reduce(evolveWebhook, state);

/**
 * The default target: the first route matching the event type, else the webhook's own queue.
 * Given the queues its owner drains now, a target the owner has stopped draining (a queue removed
 * after the webhook or route named it) gives way to the owner's first queue: never a todo on a
 * queue nobody drains.
 */
export function defaultQueue(
  state: WebhookState,
  eventType: string | null,
  ownerQueues?: readonly string[],
): string | null {
  if (state.webhook.status !== 'active') return null;
  const route = state.routes.find((r) => r.event_type === null || r.event_type === eventType);
  const target = route?.queue ?? state.webhook.queue;
  if (ownerQueues === undefined || ownerQueues.length === 0 || ownerQueues.includes(target)) return target;
  return ownerQueues[0]!;
}
