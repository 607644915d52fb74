// RULES (issue 7): rule, route and replay verbs
import { addWebhookRoute } from './add-webhook-route.ts';
import { addWebhookRule } from './add-webhook-rule.ts';
import { claim } from './claim.ts';
import { claimNext } from './claim-next.ts';
import { complete } from './complete.ts';
import { createFor } from './create-for.ts';
import { createWebhook } from './create-webhook.ts';
import { fail } from './fail.ts';
import { getTodo } from './get-todo.ts';
import { heartbeat } from './heartbeat.ts';
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
import { setWebhookRules } from './set-webhook-rules.ts';
import { testWebhookRules } from './test-webhook-rules.ts';
import type { McpTool } from './types.ts';
import { updateWebhookRule } from './update-webhook-rule.ts';

/** Every tool this server implements; an endpoint sees those its verbs allow. */
export const allTools: readonly McpTool[] = [
  listTodos,
  getTodo,
  claim,
  claimNext,
  complete,
  fail,
  release,
  heartbeat,
  createFor,
  listFriends,
  createWebhook,
  listWebhooks,
  listWebhookEvents,
  // RULES (issue 7)
  replayWebhookEvent,
  listWebhookRules,
  setWebhookRules,
  addWebhookRule,
  updateWebhookRule,
  moveWebhookRule,
  removeWebhookRule,
  testWebhookRules,
  listWebhookRoutes,
  addWebhookRoute,
  removeWebhookRoute,
];
