/**
 * The MCP verb catalog: every verb an endpoint may be vended with (spec 2.9 `verbs`, 4.15) is
 * listed here once, in its group, and nothing else is. The vend allowlist (`isVerb`, the API's
 * schema) and the tools the MCP server serves (src/mcp/tools/index.ts, a record keyed by `Verb`,
 * so the type check fails when a verb has no tool or a tool no verb) both come from this list.
 * A vend without `verbs` gets DEFAULT_VERBS.
 */
export const VERB_GROUPS = {
  /** Draining the endpoint's queues. */
  drain: ['list_todos', 'get_todo', 'claim', 'claim_next', 'complete', 'fail', 'release', 'heartbeat'],
  /** Reading the accepted events the endpoint may see (spec 1.1, 2.2, 2.3). */
  event: ['list_events', 'get_event'],
  /** The endpoint's own webhooks (release 0.3.0; replay 0.4.0). */
  webhook: [
    'create_webhook',
    'list_webhooks',
    'list_webhook_events',
    'replay_webhook_event',
    'rotate_webhook_secret',
  ],
  /** Release 0.5.0: owner-only rule and route verbs. */
  rule: [
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
  ],
  /** Release 0.5.0: hand a todo across an approved friendship, and list those friendships. */
  friend: ['create_for', 'list_friends'],
} as const;

export type VerbGroup = keyof typeof VERB_GROUPS;

export const DRAIN_VERBS = VERB_GROUPS.drain;
export const EVENT_VERBS = VERB_GROUPS.event;
export const WEBHOOK_VERBS = VERB_GROUPS.webhook;
export const RULE_VERBS = VERB_GROUPS.rule;
export const FRIEND_VERBS = VERB_GROUPS.friend;

/** The whole catalog, in allowlist order. */
export const ALL_VERBS = [
  ...DRAIN_VERBS,
  ...EVENT_VERBS,
  ...FRIEND_VERBS,
  ...WEBHOOK_VERBS,
  ...RULE_VERBS,
] as const;

export type Verb = (typeof ALL_VERBS)[number];

/** What a vend without `verbs` is given. */
export const DEFAULT_VERBS: readonly Verb[] = ALL_VERBS;

export const isVerb = (v: string): v is Verb => (ALL_VERBS as readonly string[]).includes(v);

/** Deduplicated, in allowlist order, so equal scopes read the same everywhere. */
export const normalizeVerbs = (verbs: readonly Verb[]): Verb[] => ALL_VERBS.filter((v) => verbs.includes(v));

/**
 * The catalog verbs among those an endpoint was vended with. Endpoints vended before a verb left
 * the catalog still hold it in their stream;
 * what is shown and served is only what the catalog has.
 */
export const servedVerbs = (verbs: readonly string[]): Verb[] => ALL_VERBS.filter((v) => verbs.includes(v));
