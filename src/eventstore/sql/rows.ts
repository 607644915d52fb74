import { sql } from 'kysely';
import type { ContentType, RecordedEvent } from '../port.ts';
import { formatPosition } from './positions.ts';

/**
 * An event row as the read queries return it. Numbers travel as text: PGlite returns int8 as a JS
 * number (exact only up to 2^53) and node-pg leaves xid8 as text, so both adapters parse the same.
 */
export interface EventRow {
  readonly tx: string;
  readonly gp: string;
  readonly stream_id: string;
  readonly revision: string;
  readonly event_id: string;
  readonly event_type: string;
  readonly content_type: string;
  readonly data: Uint8Array;
  readonly metadata: Uint8Array | null;
  readonly created_at: Date;
}

export const eventColumns = sql`transaction_id::text as tx, global_position::text as gp, stream_id,
  revision::text as revision, event_id::text as event_id, event_type, content_type, data, metadata, created_at`;

/** Bytes a row weighs, for the page bound: octet_length reads a TOASTed value's size without fetching it. */
export const rowBytes = sql`(octet_length(data) + coalesce(octet_length(metadata), 0))`;

export function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.event_id,
    streamId: row.stream_id,
    revision: BigInt(row.revision),
    position: formatPosition(row.tx, row.gp),
    type: row.event_type,
    data: row.data,
    metadata: row.metadata ?? null,
    contentType: row.content_type as ContentType,
    createdAt: row.created_at instanceof Date ? row.created_at : new Date(row.created_at),
  };
}
