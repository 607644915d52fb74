import { sql } from 'kysely';
import type { ContentType, RecordedEvent } from '../port.ts';
import { formatPosition } from './positions.ts';

/**
 * An event row as the read queries return it. Numbers travel as text: PGlite returns int8 as a JS
 * number (exact only up to 2^53) and node-pg leaves xid8 as text, so both adapters parse the same.
 * Bytes travel as hex text decoded by Buffer: PGlite's own bytea parser works a byte at a time in
 * JS and was measured 10x slower than this; on node-pg it is what its parser does anyway.
 */
export interface EventRow {
  readonly tx: string;
  readonly gp: string;
  readonly stream_id: string;
  readonly revision: string;
  readonly event_id: string;
  readonly event_type: string;
  readonly content_type: string;
  readonly data_hex: string;
  readonly metadata_hex: string | null;
  readonly created_at: Date;
}

export const eventColumns = sql`transaction_id::text as tx, global_position::text as gp, stream_id,
  revision::text as revision, event_id::text as event_id, event_type, content_type,
  encode(data, 'hex') as data_hex, encode(metadata, 'hex') as metadata_hex, created_at`;

/** Bytes a row weighs, for the page bound: octet_length reads a TOASTed value's size without fetching it. */
export const rowBytes = sql`(octet_length(data) + coalesce(octet_length(metadata), 0))`;

/** Bytes of data and metadata a row carries, without decoding it. */
export const rowSize = (row: EventRow): number => (row.data_hex.length + (row.metadata_hex?.length ?? 0)) / 2;

/** Hex for a bytea parameter, decoded by `decode(x, 'hex')` in SQL (see EventRow for why). */
export const toHex = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');

export function toRecordedEvent(row: EventRow): RecordedEvent {
  return {
    id: row.event_id,
    streamId: row.stream_id,
    revision: BigInt(row.revision),
    position: formatPosition(row.tx, row.gp),
    type: row.event_type,
    data: Buffer.from(row.data_hex, 'hex'),
    metadata: row.metadata_hex === null ? null : Buffer.from(row.metadata_hex, 'hex'),
    contentType: row.content_type as ContentType,
    createdAt: row.created_at instanceof Date ? row.created_at : new Date(row.created_at),
  };
}
