import { z } from 'zod';
import { agentEvents, agentNameEvents } from './agent/events.ts';
import { type DeliveryMetadata, deliveryMetadataSchema, reservationEvents } from './delivery/events.ts';
import { doorbellEvents, endpointEvents, endpointSlugEvents } from './endpoint/events.ts';
import { EventDecodeError } from './errors.ts';
import { friendEvents } from './friend/events.ts';
import { providerEvents } from './provider/events.ts';
import { quarantineEvents } from './quarantine/events.ts';
import { replayEvents } from './replay/events.ts';
import { RetentionRan } from './retention/events.ts';
import { settingsEvents } from './settings/events.ts';
import type { EventSchema } from './shared.ts';
import { todoEvents, todoKeyEvents } from './todo/events.ts';
import { dispositionEvents, webhookEvents } from './webhook/events.ts';

/**
 * Every JSON event type of the log with its schema (the raw `DeliveryReceived` is the one event
 * whose data is bytes; its metadata has a schema of its own in delivery/events.ts). What is read
 * from the store is decoded here and nowhere else: an unknown type or data that fails its schema
 * is an EventDecodeError naming the stream, never a cast.
 */
const schemas = [
  ...agentEvents,
  ...agentNameEvents,
  ...endpointEvents,
  ...endpointSlugEvents,
  ...doorbellEvents,
  ...friendEvents,
  ...providerEvents,
  ...settingsEvents,
  ...todoEvents,
  ...todoKeyEvents,
  ...webhookEvents,
  ...dispositionEvents,
  ...quarantineEvents,
  ...replayEvents,
  ...reservationEvents,
  RetentionRan,
] as const;

export type DomainEvent = z.infer<(typeof schemas)[number]>;
export type DomainEventType = DomainEvent['type'];

const domainEventSchema = z.discriminatedUnion('type', schemas);
const known = new Set<string>(schemas.map((s: EventSchema) => s.shape.type.value));

/** Whether `type` is one of `types` (an aggregate's), for a projection's cheap pre-filter. */
export const isOneOfTypes = (types: readonly string[], type: string): boolean => types.includes(type);

export const isDomainEventType = (type: string): type is DomainEventType => known.has(type);

/** What the decoder needs of a stored event (the store's RecordedEvent has it). */
export interface StoredEvent {
  readonly streamId: string;
  readonly type: string;
  readonly data: Uint8Array;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * What was decoded of a stored event, by the event object: the store hands one object of an event
 * to every live reader of the process (the projections' shared feed, the live hub: the SQL
 * store's live tail), so each event is parsed and validated once, however many read it. The
 * result is shared, so it is frozen (its top level: nobody may change what others read).
 */
const decodedEvents = new WeakMap<object, DomainEvent>();
const decodedMetadata = new WeakMap<object, DeliveryMetadata>();

/** The one decoder: JSON bytes to a validated domain event. */
export function decodeEvent(stored: StoredEvent): DomainEvent {
  const seen = decodedEvents.get(stored);
  if (seen) return seen;
  const event = parseEvent(stored);
  Object.freeze(event.data);
  decodedEvents.set(stored, Object.freeze(event));
  return event;
}

function parseEvent(stored: StoredEvent): DomainEvent {
  if (!known.has(stored.type))
    throw new EventDecodeError(stored.streamId, stored.type, 'no aggregate knows this event type');
  let data: unknown;
  try {
    data = JSON.parse(utf8.decode(stored.data));
  } catch {
    throw new EventDecodeError(stored.streamId, stored.type, 'its data is not JSON');
  }
  const parsed = domainEventSchema.safeParse({ type: stored.type, data });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue ? issue.path.slice(1).join('.') : '';
    throw new EventDecodeError(
      stored.streamId,
      stored.type,
      `malformed data${where ? ` at ${where}` : ''}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}

/** A `DeliveryReceived` as stored: its data is the raw body, its metadata JSON. */
export interface StoredDelivery {
  readonly streamId: string;
  readonly type: string;
  readonly metadata: Uint8Array | null;
}

/** The metadata of a `DeliveryReceived`, validated like every other event (once per event object). */
export function decodeDeliveryMetadata(stored: StoredDelivery): DeliveryMetadata {
  const seen = decodedMetadata.get(stored);
  if (seen) return seen;
  const metadata = Object.freeze(parseDeliveryMetadata(stored));
  decodedMetadata.set(stored, metadata);
  return metadata;
}

function parseDeliveryMetadata(stored: StoredDelivery): DeliveryMetadata {
  let metadata: unknown;
  try {
    metadata = JSON.parse(utf8.decode(stored.metadata ?? new Uint8Array()));
  } catch {
    throw new EventDecodeError(stored.streamId, stored.type, 'its metadata is not JSON');
  }
  const parsed = deliveryMetadataSchema.safeParse(metadata);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new EventDecodeError(
      stored.streamId,
      stored.type,
      `malformed metadata${issue?.path.length ? ` at ${issue.path.join('.')}` : ''}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}

/** Decodes an event that must be one of `types` (an aggregate's own stream); anything else is an error. */
export function decodeOneOf<T extends DomainEventType>(
  stored: StoredEvent,
  types: readonly T[],
): Extract<DomainEvent, { type: T }> {
  const event = decodeEvent(stored);
  if (!isOneOf(event, types)) {
    throw new EventDecodeError(
      stored.streamId,
      stored.type,
      'this event type does not belong on this stream',
    );
  }
  return event;
}

const isOneOf = <T extends DomainEventType>(
  event: DomainEvent,
  types: readonly T[],
): event is Extract<DomainEvent, { type: T }> => (types as readonly string[]).includes(event.type);

/** As decodeOneOf, typed by an aggregate's event union (the command handler's fold). */
export function decodeAggregateEvent<E extends DomainEvent>(
  stored: StoredEvent,
  types: readonly E['type'][],
): E {
  const event = decodeEvent(stored);
  if (!isAggregateEvent<E>(event, types)) {
    throw new EventDecodeError(
      stored.streamId,
      stored.type,
      'this event type does not belong on this stream',
    );
  }
  return event;
}

const isAggregateEvent = <E extends DomainEvent>(
  event: DomainEvent,
  types: readonly E['type'][],
): event is E => (types as readonly string[]).includes(event.type);
