import { ALL_VERBS, type Verb } from '../../domain/endpoint/verbs.ts';
import { addWebhookRoute } from './add-webhook-route.ts';
import { addWebhookRule } from './add-webhook-rule.ts';
import { claim } from './claim.ts';
import { claimNext } from './claim-next.ts';
import { complete } from './complete.ts';
import { createFor } from './create-for.ts';
import { createWebhook } from './create-webhook.ts';
import { fail } from './fail.ts';
import { getEvent } from './get-event.ts';
import { getTodo } from './get-todo.ts';
import { heartbeat } from './heartbeat.ts';
import { listEvents } from './list-events.ts';
import { listFriends } from './list-friends.ts';
import { listTodos } from './list-todos.ts';
import { listWebhookEvents } from './list-webhook-events.ts';
import { listWebhookRoutes } from './list-webhook-routes.ts';
import { listWebhookRules } from './list-webhook-rules.ts';
import { listWebhooks } from './list-webhooks.ts';
import { moveWebhookRule } from './move-webhook-rule.ts';
import { release } from './release.ts';
import { removeWebhookRoute } from './remove-webhook-route.ts';
import { removeWebhookRule } from './remove-webhook-rule.ts';
import { replayWebhookEvent } from './replay-webhook-event.ts';
import { rotateWebhookSecretTool } from './rotate-webhook-secret.ts';
import { setWebhookRules } from './set-webhook-rules.ts';
import { testWebhookRules } from './test-webhook-rules.ts';
import type { McpTool } from './types.ts';
import { updateWebhookRule } from './update-webhook-rule.ts';

/**
 * The served half of the verb catalog (src/domain/endpoint/verbs.ts): exactly one tool per verb,
 * keyed by it. A verb without a tool, or a tool outside the catalog, fails the type check.
 */
const toolCatalog: { readonly [V in Verb]: McpTool & { readonly name: V } } = {
  list_todos: listTodos,
  get_todo: getTodo,
  claim,
  claim_next: claimNext,
  complete,
  fail,
  release,
  heartbeat,
  list_events: listEvents,
  get_event: getEvent,
  create_for: createFor,
  list_friends: listFriends,
  create_webhook: createWebhook,
  list_webhooks: listWebhooks,
  list_webhook_events: listWebhookEvents,
  replay_webhook_event: replayWebhookEvent,
  rotate_webhook_secret: rotateWebhookSecretTool,
  list_webhook_rules: listWebhookRules,
  set_webhook_rules: setWebhookRules,
  add_webhook_rule: addWebhookRule,
  update_webhook_rule: updateWebhookRule,
  move_webhook_rule: moveWebhookRule,
  remove_webhook_rule: removeWebhookRule,
  test_webhook_rules: testWebhookRules,
  list_webhook_routes: listWebhookRoutes,
  add_webhook_route: addWebhookRoute,
  remove_webhook_route: removeWebhookRoute,
};

/** Every tool this server implements, in catalog order; an endpoint sees those its verbs allow. */
export const allTools: readonly McpTool[] = ALL_VERBS.map((verb) => toolCatalog[verb]);
