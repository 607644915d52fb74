import { type EventData, type RecordedEvent, STAMP_WIDTH } from './port.ts';

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

/**
 * A domain event one of whose top-level number fields the store fills in on an atomic append
 * (port.ts, RevisionStamp): the field is written first, as spaces, and its value in `data` is
 * ignored. The revision of the first event appended to `streamId` in the same append, plus `add`.
 */
export function stampedEvent(
  event: { readonly type: string; readonly data: Readonly<Record<string, unknown>> },
  field: string,
  stamp: { readonly streamId: string; readonly add: number },
): EventData {
  const { [field]: _, ...rest } = event.data;
  const head = `{${JSON.stringify(field)}:`;
  const tail = JSON.stringify(rest).slice(1);
  const text = `${head}${' '.repeat(STAMP_WIDTH)}${tail === '}' ? '}' : `,${tail}`}`;
  return {
    type: event.type,
    data: encoder.encode(text),
    contentType: 'application/json',
    stamp: { ...stamp, offset: encoder.encode(head).byteLength },
  };
}

export function parseData<T = unknown>(event: Pick<RecordedEvent, 'data'>): T {
  return JSON.parse(decoder.decode(event.data)) as T;
}

export function parseMetadata<T = unknown>(event: Pick<RecordedEvent, 'metadata'>): T | null {
  return event.metadata ? (JSON.parse(decoder.decode(event.metadata)) as T) : null;
}
