import type { EventData, RecordedEvent } from './port.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** A JSON event for the store. Domain events are JSON; raw webhook bodies travel as bytes elsewhere. */
export function jsonEvent(type: string, data: unknown, metadata?: unknown, id?: string): EventData {
  return {
    ...(id ? { id } : {}),
    type,
    data: encoder.encode(JSON.stringify(data)),
    ...(metadata === undefined ? {} : { metadata: encoder.encode(JSON.stringify(metadata)) }),
    contentType: 'application/json',
  };
}

/** A domain event (`{ type, data }`, data JSON) as the store takes it: the one encoder. */
export const encodeEvent = (event: { readonly type: string; readonly data: unknown }): EventData =>
  jsonEvent(event.type, event.data);

export function parseData<T = unknown>(event: Pick<RecordedEvent, 'data'>): T {
  return JSON.parse(decoder.decode(event.data)) as T;
}

export function parseMetadata<T = unknown>(event: Pick<RecordedEvent, 'metadata'>): T | null {
  return event.metadata ? (JSON.parse(decoder.decode(event.metadata)) as T) : null;
}
