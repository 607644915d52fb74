import { z } from 'zod';
import { defineEvent, typesOf } from '../shared.ts';
import { FAULT_REASONS } from './rules.ts';

/**
 * The webhook aggregate, stream `webhook-<id>` (`wh_…`). A webhook belongs to an endpoint
 * (release 0.3.0) and trusts its unguessable ingest URL (trust mode `token`): the URL token is
 * kept only as its SHA-256 (hex), so the ingest path finds the webhook by hashing the token it
 * receives. Its stream also holds its signing secret (sealed) and its rules and routes (release
 * 0.4.0/0.5.0): every rule event carries the list's new `version` (1, 2, …), which a disposition
 * names, and the save dry run is judged against exactly that list.
 */
export const webhookStream = (webhookId: string): string => `webhook-${webhookId}`;
/**
 * What became of each delivery on a webhook with rules: its own stream rather than the webhook's,
 * so that loading the webhook to decide on its rules never folds its traffic.
 */
export const dispositionStream = (webhookId: string): string => `dispositions-${webhookId}`;

export const WebhookCreated = defineEvent(
  'WebhookCreated',
  z.object({
    webhook_id: z.string(),
    endpoint_id: z.string(),
    operator: z.string(),
    name: z.string(),
    /** The queue its deliveries become todos on. */
    queue: z.string(),
    trust_mode: z.literal('token'),
    token_hash: z.string(),
    created_by: z.string(),
    created_at: z.string(),
  }),
);

/**
 * How a webhook's deliveries are signed, as recorded: Standard Webhooks, or the scheme of a
 * sender people already have (the code host's `X-Hub-Signature-256`, the payment provider's
 * `t=`/`v1=`, the chat platform's `v0=`), verified by the same code as the instance receivers.
 */
export const SIGNING_SCHEMES = ['standard-webhooks', 'codehost', 'payments', 'chat'] as const;
export type SigningScheme = (typeof SIGNING_SCHEMES)[number];

/**
 * The scheme a caller names (create_webhook's `scheme`, a vend's `webhook_scheme`): one of the
 * recorded ones (`standard` for Standard Webhooks) or `none`, no secret (the URL is the credential).
 */
export const WEBHOOK_SCHEMES = ['standard', 'codehost', 'payments', 'chat', 'none'] as const;
export type WebhookScheme = (typeof WEBHOOK_SCHEMES)[number];

export const recordedScheme = (scheme: Exclude<WebhookScheme, 'none'>): SigningScheme =>
  scheme === 'standard' ? 'standard-webhooks' : scheme;

export const namedScheme = (scheme: SigningScheme | null): WebhookScheme =>
  scheme === null ? 'none' : scheme === 'standard-webhooks' ? 'standard' : scheme;

/** Its own signing secret, sealed with the secret box and bound to the webhook id. */
export const WebhookSigningSecretSet = defineEvent(
  'WebhookSigningSecretSet',
  z.object({
    webhook_id: z.string(),
    scheme: z.enum(SIGNING_SCHEMES),
    /** The secret (`whsec_…`, or as the sender's side made it) sealed with the secret box. */
    secret_sealed: z.string(),
    /** true: a delivery without a valid signature is refused (401); false: unsigned ones pass unverified. */
    required: z.boolean(),
    set_at: z.string(),
  }),
);

/**
 * A secret rotation: the new secret (sealed) verifies from now on, and the one it replaces keeps
 * verifying until `previous_expires_at` (or until retired), so a sender can be switched over
 * without a window in which either secret fails.
 */
export const WebhookSecretRotated = defineEvent(
  'WebhookSecretRotated',
  z.object({
    webhook_id: z.string(),
    secret_sealed: z.string(),
    previous_expires_at: z.string(),
    by: z.string(),
    at: z.string(),
  }),
);

/** The rotation ends early: the previous secret no longer verifies. */
export const WebhookPreviousSecretRetired = defineEvent(
  'WebhookPreviousSecretRetired',
  z.object({ webhook_id: z.string(), by: z.string(), at: z.string() }),
);

/** A rule: a stable id and a JavaScript function expression (rules-sandbox/README.md). */
export const storedRule = z.object({ id: z.string(), source: z.string() });
export type StoredRule = z.infer<typeof storedRule>;

/**
 * A route: a declarative target the webhook's default uses. When no rule decides (or there are
 * no rules), the first route whose `event_type` matches the delivery (null matches any) names
 * the queue; with no matching route, the webhook's own queue.
 */
export const storedRoute = z.object({
  route_id: z.string(),
  queue: z.string(),
  event_type: z.string().nullable(),
});
export type StoredRoute = z.infer<typeof storedRoute>;

const stamp = {
  webhook_id: z.string(),
  /** `endpoint:<slug>` of the caller, or `upgrade` for events written by a migration. */
  by: z.string(),
  at: z.string(),
};
const version = z.number().int();

export const WebhookRulesSet = defineEvent(
  'WebhookRulesSet',
  z.object({ ...stamp, version, rules: z.array(storedRule) }),
);
export const WebhookRuleAdded = defineEvent(
  'WebhookRuleAdded',
  z.object({ ...stamp, version, rule: storedRule, position: z.number().int() }),
);
export const WebhookRuleUpdated = defineEvent(
  'WebhookRuleUpdated',
  z.object({ ...stamp, version, rule_id: z.string(), source: z.string() }),
);
export const WebhookRuleMoved = defineEvent(
  'WebhookRuleMoved',
  z.object({ ...stamp, version, rule_id: z.string(), position: z.number().int() }),
);
export const WebhookRuleRemoved = defineEvent(
  'WebhookRuleRemoved',
  z.object({ ...stamp, version, rule_id: z.string() }),
);
export const WebhookRouteAdded = defineEvent(
  'WebhookRouteAdded',
  z.object({ ...stamp, ...storedRoute.shape }),
);
export const WebhookRouteRemoved = defineEvent(
  'WebhookRouteRemoved',
  z.object({ ...stamp, route_id: z.string() }),
);

export const DISPOSITIONS = ['routed', 'dropped', 'held', 'faulted'] as const;
/**
 * - `routed`: a todo on `queue` (a rule's route, or the default when every rule continued);
 * - `dropped`: a rule dropped it; no todo;
 * - `held`: a rule's quarantine action; a todo in `quarantine`;
 * - `faulted`: evaluation failed (`reason`); a todo in `quarantine`, nothing anywhere else.
 */
export type Disposition = (typeof DISPOSITIONS)[number];

/** A fault reason: the sandbox's, or `scope` (a rule routed to a queue its owner does not drain). */
export const DISPOSITION_REASONS = [...FAULT_REASONS, 'scope'] as const;
export type DispositionReason = (typeof DISPOSITION_REASONS)[number];

/** One per delivery on a webhook with rules, on `dispositions-<webhook id>` (design.md: dispositions are events). */
export const DeliveryDisposed = defineEvent(
  'DeliveryDisposed',
  z.object({
    event_id: z.number(),
    webhook_id: z.string(),
    endpoint_id: z.string(),
    operator: z.string(),
    disposition: z.enum(DISPOSITIONS),
    /** The queue its todo went to (`quarantine` for held and faulted), null when dropped. */
    queue: z.string().nullable(),
    todo_id: z.string().nullable(),
    /** The rule that decided or faulted; null for the default, or a fault no rule is to blame for. */
    rule: z.object({ id: z.string(), index: z.number().int() }).nullable(),
    reason: z.enum(DISPOSITION_REASONS).nullable(),
    message: z.string().nullable(),
    rules_version: z.number().int(),
    disposed_at: z.string(),
  }),
);

export const ruleEvents = [
  WebhookRulesSet,
  WebhookRuleAdded,
  WebhookRuleUpdated,
  WebhookRuleMoved,
  WebhookRuleRemoved,
] as const;
export const routeEvents = [WebhookRouteAdded, WebhookRouteRemoved] as const;
export const secretEvents = [WebhookSecretRotated, WebhookPreviousSecretRetired] as const;
export const webhookEvents = [
  WebhookCreated,
  WebhookSigningSecretSet,
  ...secretEvents,
  ...ruleEvents,
  ...routeEvents,
] as const;
export const dispositionEvents = [DeliveryDisposed] as const;

export type WebhookEvent = z.infer<(typeof webhookEvents)[number]>;
export type SecretEvent = z.infer<(typeof secretEvents)[number]>;
export type RulesAndRoutesEvent = z.infer<(typeof ruleEvents)[number] | (typeof routeEvents)[number]>;
export type DeliveryDisposedEvent = z.infer<typeof DeliveryDisposed>;

export const WEBHOOK_EVENT_TYPES = typesOf(webhookEvents);
