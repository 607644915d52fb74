import { claim } from './claim.ts';
import { claimNext } from './claim-next.ts';
import { complete } from './complete.ts';
import { createWebhook } from './create-webhook.ts';
import { fail } from './fail.ts';
import { getTodo } from './get-todo.ts';
import { heartbeat } from './heartbeat.ts';
import { listTodos } from './list-todos.ts';
import { listWebhookEvents } from './list-webhook-events.ts';
import { listWebhooks } from './list-webhooks.ts';
import { release } from './release.ts';
import type { McpTool } from './types.ts';

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
  createWebhook,
  listWebhooks,
  listWebhookEvents,
];
