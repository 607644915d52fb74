/**
 * The MCP verb allowlist an endpoint may be vended with (spec 2.9 `verbs`: drain, webhook and
 * event verbs; 4.15 names them). A vend without `verbs` gets every verb. The MCP server refuses
 * a verb the endpoint does not hold.
 */
export const DRAIN_VERBS = [
  'list_todos',
  'get_todo',
  'claim',
  'claim_next',
  'complete',
  'fail',
  'release',
  'heartbeat',
] as const;

export const EVENT_VERBS = ['list_events', 'get_event'] as const;

export const WEBHOOK_VERBS = [
  'create_webhook',
  'list_webhooks',
  'list_webhook_events',
  'replay_webhook_event',
] as const;

/** Release 0.5.0: owner-only rule and route verbs. */
export const RULE_VERBS = [
  'list_webhook_rules',
  'set_webhook_rules',
  'add_webhook_rule',
  'update_webhook_rule',
  'move_webhook_rule',
  'remove_webhook_rule',
  'test_webhook_rules',
  'list_webhook_routes',
  'add_webhook_route',
  'remove_webhook_route',
] as const;

/** Release 0.5.0: hand a todo across an approved friendship, and list those friendships. */
export const OTHER_VERBS = ['create_for', 'list_friends'] as const;

export const ALL_VERBS = [
  ...DRAIN_VERBS,
  ...OTHER_VERBS,
  ...EVENT_VERBS,
  ...WEBHOOK_VERBS,
  ...RULE_VERBS,
] as const;

export type Verb = (typeof ALL_VERBS)[number];

export const isVerb = (v: string): v is Verb => (ALL_VERBS as readonly string[]).includes(v);

/** Deduplicated, in allowlist order, so equal scopes read the same everywhere. */
export const normalizeVerbs = (verbs: readonly Verb[]): Verb[] => ALL_VERBS.filter((v) => verbs.includes(v));
