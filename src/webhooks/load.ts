import { readAggregate } from '../commands/handle-command.ts';
import { webhookDecider } from '../domain/webhook/decide.ts';
import { webhookStream } from '../domain/webhook/events.ts';
import type { EventStore } from '../eventstore/port.ts';

/** The webhook with its signing rule, rules and routes, and the stream revision to append at. */
export const loadWebhook = (store: EventStore, webhookId: string) =>
  readAggregate(store, webhookStream(webhookId), webhookDecider);
