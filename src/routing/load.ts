import { loadAggregate } from '../domain/endpoint/aggregate.ts';
import { webhookStream } from '../domain/webhook/decide.ts';
import {
  evolveRouting,
  initialRoutingState,
  isRoutingEventType,
  type RoutingState,
  type RoutingStreamEvent,
} from '../domain/webhook/rules.ts';
import type { EventStore } from '../eventstore/port.ts';

/** The webhook with its rules and routes, and the stream revision to append at. */
export function loadRouting(store: EventStore, webhookId: string) {
  return loadAggregate<RoutingState, RoutingStreamEvent>(
    store,
    webhookStream(webhookId),
    initialRoutingState,
    evolveRouting,
    isRoutingEventType,
  );
}
