import { type ColumnType, type Kysely, type Selectable, sql } from 'kysely';
import { type CopySpec, type CopyValue, copyRows } from '../src/db/copy.ts';
import type { Database } from '../src/db/database.ts';
import {
  DELIVERIES_STREAM,
  DELIVERY_RECEIVED,
  eventIdFromRevision,
  type IngestAck,
  type TrustMode,
} from '../src/domain/delivery/events.ts';
import { decodeDeliveryMetadata, decodeEvent } from '../src/domain/events.ts';
import { parseProviderName } from '../src/domain/provider/names.ts';
import { RETENTION_STREAM } from '../src/domain/retention/events.ts';
import { HooklineError } from '../src/errors.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './types.ts';

/** The log read model (spec 2.2/2.3), one row per `DeliveryReceived` of the `deliveries` stream. */
export interface LogEventsTable {
  /** The spec's event id: `deliveries` revision + 1. */
  id: ColumnType<bigint | number, bigint | number, never>;
  /** The delivery event's UUID: how a duplicate finds its original. */
  event_uuid: string;
  position: string;
  provider: string;
  event_type: string | null;
  trust_mode: string;
  verified: boolean;
  verify_detail: string | null;
  external_id: string | null;
  content_type: string | null;
  source_ip: string | null;
  headers: ColumnType<Record<string, string>, string, string>;
  payload: ColumnType<Uint8Array, Uint8Array, Uint8Array>;
  payload_size: number;
  received_at: ColumnType<Date, Date, Date>;
  disposition: string | null;
}

/**
 * Retention as the log has applied it (one row, id 1): no delivery with an id below `before_id` is
 * kept. It comes from the retention job's RetentionRan events, so a rebuild applies the same prunes
 * at the same points and gives the live rows, whatever the store has or has not scavenged.
 */
export interface LogRetentionTable {
  id: number;
  before_id: ColumnType<bigint | number, bigint | number, bigint | number>;
}

export interface LogTables {
  log_events: LogEventsTable;
  log_retention: LogRetentionTable;
}

const decoder = new TextDecoder();
/** Rows and payload bytes per COPY (each is one buffer in memory before it is sent). */
const COPY_ROWS_MAX = 2_000;
const COPY_BYTES_MAX = 32 * 1024 * 1024;

/**
 * A delivery's row, loaded with binary COPY (src/db/copy.ts): about half the server time of an
 * INSERT from unnested arrays, which PostgreSQL had to parse from text. `disposition` starts null.
 */
const LOG_COPY: CopySpec = {
  table: 'log_events',
  columns: [
    ['id', 'int8'],
    ['event_uuid', 'uuid'],
    ['position', 'text'],
    ['provider', 'text'],
    ['event_type', 'text'],
    ['trust_mode', 'text'],
    ['verified', 'bool'],
    ['verify_detail', 'text'],
    ['external_id', 'text'],
    ['content_type', 'text'],
    ['source_ip', 'text'],
    ['headers', 'jsonb'],
    ['payload', 'bytea'],
    ['payload_size', 'int4'],
    ['received_at', 'timestamptz'],
  ],
};

function* logRows(deliveries: readonly RecordedEvent[]): Generator<CopyValue[]> {
  for (const e of deliveries) {
    const m = decodeDeliveryMetadata(e);
    const receivedAt = Date.parse(m.received_at);
    if (Number.isNaN(receivedAt)) throw new Error(`delivery ${e.id} has no valid received_at`);
    yield [
      eventIdFromRevision(e.revision),
      e.id,
      e.position,
      m.provider,
      m.event_type ?? null,
      m.trust_mode,
      m.verified,
      m.verify_detail ?? null,
      m.external_id ?? null,
      m.content_type ?? null,
      m.source_ip ?? null,
      JSON.stringify(m.headers ?? {}),
      e.data,
      e.data.byteLength,
      receivedAt,
    ];
  }
}

const isRetentionRan = (e: Pick<RecordedEvent, 'streamId' | 'type'>): boolean =>
  e.streamId === RETENTION_STREAM && e.type === 'RetentionRan';

/** The first id a RetentionRan says the log keeps (0: none); older events only have truncated_before_id. */
function retainedFrom(e: RecordedEvent): number {
  const event = decodeEvent(e);
  if (event.type !== 'RetentionRan') return 0;
  const ids = [event.data.log_before_id, event.data.truncated_before_id].filter(
    (v): v is number => typeof v === 'number' && Number.isSafeInteger(v),
  );
  return Math.max(0, ...ids);
}

/** The first delivery id the log keeps (1 when retention has pruned nothing yet). */
export async function logRetainedFrom(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom('log_retention').select('before_id').where('id', '=', 1).executeTakeFirst();
  return row ? Number(row.before_id) : 1;
}

export const logProjection: Projection = {
  name: 'log',
  // 2: retention applied by the projection itself (log_retention).
  version: 2,
  tables: ['log_events', 'log_retention'],
  async createTables(db) {
    await db.schema
      .createTable('log_events')
      .ifNotExists()
      .addColumn('id', 'bigint', (c) => c.primaryKey())
      .addColumn('event_uuid', 'uuid', (c) => c.notNull().unique())
      .addColumn('position', 'text', (c) => c.notNull())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('event_type', 'text')
      .addColumn('trust_mode', 'text', (c) => c.notNull())
      .addColumn('verified', 'boolean', (c) => c.notNull())
      .addColumn('verify_detail', 'text')
      .addColumn('external_id', 'text')
      .addColumn('content_type', 'text')
      .addColumn('source_ip', 'text')
      .addColumn('headers', 'jsonb', (c) => c.notNull())
      .addColumn('payload', 'bytea', (c) => c.notNull())
      .addColumn('payload_size', 'integer', (c) => c.notNull())
      .addColumn('received_at', 'timestamptz', (c) => c.notNull())
      .addColumn('disposition', 'text')
      .execute();
    // One index per query shape of spec 4.5 (ordering received_at desc, id desc, optional
    // provider and event_type filters); the provider one also serves the 24 h recent counts.
    const indexes: [string, string[]][] = [
      ['log_events_received_idx', ['received_at desc', 'id desc']],
      ['log_events_provider_idx', ['provider', 'received_at desc', 'id desc']],
      ['log_events_type_idx', ['event_type', 'received_at desc', 'id desc']],
      ['log_events_provider_type_idx', ['provider', 'event_type', 'received_at desc', 'id desc']],
    ];
    for (const [name, columns] of indexes) {
      await db.schema.createIndex(name).ifNotExists().on('log_events').columns(columns).execute();
    }
    await db.schema
      .createTable('log_retention')
      .ifNotExists()
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('before_id', 'bigint', (c) => c.notNull())
      .execute();
  },
  handles: (e) =>
    (e.streamId === DELIVERIES_STREAM && e.type === DELIVERY_RECEIVED) ||
    (e.type === 'DeliveryDisposed' && e.streamId.startsWith('dispositions-')) ||
    isRetentionRan(e),
  // A delivery inserts its own row (keyed by its revision); a disposition updates a row an earlier
  // event inserted, so it waits for them.
  commutes: (e) => e.streamId === DELIVERIES_STREAM && e.type === DELIVERY_RECEIVED,
  async apply(db, events) {
    let deliveries = events.filter((e) => e.streamId === DELIVERIES_STREAM && e.type === DELIVERY_RECEIVED);
    // Every delivery below a prune point comes before it in $all (the job decides from what is
    // recorded); this keeps the rule local all the same: nothing below the floor is ever inserted.
    const floor = deliveries.length > 0 ? await logRetainedFrom(db) : 1;
    if (floor > 1) deliveries = deliveries.filter((e) => eventIdFromRevision(e.revision) >= floor);
    for (let start = 0; start < deliveries.length; ) {
      let end = start;
      let bytes = 0;
      while (
        end < deliveries.length &&
        end - start < COPY_ROWS_MAX &&
        (end === start || bytes < COPY_BYTES_MAX)
      ) {
        bytes += deliveries[end]!.data.byteLength;
        end++;
      }
      await copyRows(db, LOG_COPY, logRows(deliveries.slice(start, end)));
      start = end;
    }
    // A disposition always follows its delivery in $all, so after the inserts.
    for (const e of events) {
      if (e.type !== 'DeliveryDisposed' || !e.streamId.startsWith('dispositions-')) continue;
      const event = decodeEvent(e);
      if (event.type !== 'DeliveryDisposed') continue;
      const d = event.data;
      await db
        .updateTable('log_events')
        .set({ disposition: d.disposition })
        .where('id', '=', d.event_id)
        .execute();
    }
    // Retention: the job has already deleted these rows in small batches, so live this deletes
    // what the projection inserted since (usually nothing); in a rebuild it is the prune itself.
    const prunedBefore = Math.max(0, ...events.filter(isRetentionRan).map(retainedFrom));
    if (prunedBefore > 1) {
      await db.deleteFrom('log_events').where('id', '<', prunedBefore).execute();
      await db
        .insertInto('log_retention')
        .values({ id: 1, before_id: prunedBefore })
        .onConflict((oc) =>
          oc.column('id').doUpdateSet((eb) => ({
            before_id: eb.fn('greatest', [eb.ref('log_retention.before_id'), eb.val(prunedBefore)]),
          })),
        )
        .execute();
    }
  },
};

/** Spec 2.2. */
export interface EventSummary {
  readonly id: number;
  readonly provider: string;
  readonly event_type: string | null;
  readonly trust_mode: TrustMode;
  readonly verified: boolean;
  readonly payload_size: number;
  readonly received_at: string;
}

/** Spec 2.3, plus the raw bytes (`payload` is their UTF-8 reading) and the disposition. */
export interface EventDetail extends EventSummary {
  readonly verify_detail: string | null;
  readonly external_id: string | null;
  readonly content_type: string | null;
  readonly source_ip: string | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: string;
  readonly payload_bytes: Uint8Array;
  readonly disposition: string | null;
}

export interface LogFilters {
  readonly provider?: string | undefined;
  readonly event_type?: string | undefined;
  /** An ISO-8601 timestamp or an event id: an inclusive lower bound. */
  readonly since?: string | undefined;
}

export interface LogPage {
  readonly events: readonly EventSummary[];
  /** Opaque; pass back as `cursor` for the next (older) page, null on the last page. */
  readonly next_cursor: string | null;
}

const invalid = (field: string, detail: string) => new HooklineError('invalid_filter', detail, { field });

type SummaryRow = Pick<
  Selectable<LogEventsTable>,
  'id' | 'provider' | 'event_type' | 'trust_mode' | 'verified' | 'payload_size' | 'received_at'
>;

function toSummary(r: SummaryRow): EventSummary {
  return {
    id: Number(r.id),
    provider: r.provider,
    event_type: r.event_type,
    trust_mode: r.trust_mode as TrustMode,
    verified: r.verified,
    payload_size: r.payload_size,
    received_at: new Date(r.received_at).toISOString(),
  };
}

/** The cursor is `<epoch ms>.<id>` in base64url: opaque to clients, exact for our ms timestamps. */
export const encodeCursor = (receivedAt: Date, id: number): string =>
  Buffer.from(`${receivedAt.getTime()}.${id}`).toString('base64url');

function decodeCursor(cursor: string): { at: Date; id: number } {
  const m = /^([0-9]{1,15})\.([0-9]{1,18})$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(cursor) || !m)
    throw invalid('cursor', 'the cursor is not one this log issued');
  return { at: new Date(Number(m[1])), id: Number(m[2]) };
}

function parseLimit(limit: number | string | undefined): number {
  if (limit === undefined || limit === '') return 50;
  const n = typeof limit === 'number' ? limit : /^[0-9]{1,4}$/.test(limit) ? Number(limit) : Number.NaN;
  if (!Number.isInteger(n) || n < 1 || n > 200)
    throw invalid('limit', 'limit must be an integer from 1 to 200');
  return n;
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** Spec 4.5: newest first, `(received_at, id)` descending, keyset-paginated. */
export async function listEvents(
  db: Kysely<Database>,
  filters: LogFilters,
  cursor?: string | undefined,
  limit?: number | string | undefined,
): Promise<LogPage> {
  const size = parseLimit(limit);
  let q = db
    .selectFrom('log_events')
    .select(['id', 'provider', 'event_type', 'trust_mode', 'verified', 'payload_size', 'received_at']);
  if (filters.provider !== undefined && filters.provider !== '') {
    if (!parseProviderName(filters.provider))
      throw invalid('provider', `not a provider name: ${filters.provider}`);
    q = q.where('provider', '=', filters.provider);
  }
  if (filters.event_type !== undefined && filters.event_type !== '') {
    if (filters.event_type.length > 200)
      throw invalid('event_type', 'event_type is longer than 200 characters');
    q = q.where('event_type', '=', filters.event_type);
  }
  const since = filters.since?.trim();
  if (since) {
    if (/^[0-9]{1,18}$/.test(since)) {
      q = q.where('id', '>=', BigInt(since));
    } else if (ISO_DATE.test(since) && !Number.isNaN(Date.parse(since))) {
      q = q.where('received_at', '>=', new Date(since));
    } else {
      throw invalid('since', 'since must be an ISO-8601 date-time or an event id');
    }
  }
  if (cursor !== undefined && cursor !== '') {
    const c = decodeCursor(cursor);
    q = q.where((eb) => eb(eb.refTuple('received_at', 'id'), '<', eb.tuple(c.at, BigInt(c.id))));
  }
  const rows = await q
    .orderBy('received_at', 'desc')
    .orderBy('id', 'desc')
    .limit(size + 1)
    .execute();
  const page = rows.slice(0, size).map(toSummary);
  const last = page.at(-1);
  return {
    events: page,
    next_cursor: rows.length > size && last ? encodeCursor(new Date(last.received_at), last.id) : null,
  };
}

/** Spec 4.6; undefined when no event has that id (or the id is not an integer). */
export async function getEvent(
  db: Kysely<Database>,
  id: number | bigint | string,
): Promise<EventDetail | undefined> {
  const text = String(id);
  if (!/^[0-9]{1,18}$/.test(text)) return undefined;
  const r = await db.selectFrom('log_events').selectAll().where('id', '=', BigInt(text)).executeTakeFirst();
  if (!r) return undefined;
  const bytes = new Uint8Array(r.payload);
  return {
    ...toSummary(r),
    verify_detail: r.verify_detail,
    external_id: r.external_id,
    content_type: r.content_type,
    source_ip: r.source_ip,
    headers: r.headers,
    payload: decoder.decode(bytes),
    payload_bytes: bytes,
    disposition: r.disposition,
  };
}

/** The ack of the delivery whose event carries this UUID (the recorder's dedup look-up). */
export async function findDeliveryByUuid(
  db: Kysely<Database>,
  eventUuid: string,
): Promise<IngestAck | undefined> {
  const r = await db
    .selectFrom('log_events')
    .select(['id', 'provider', 'trust_mode', 'verified', 'received_at'])
    .where('event_uuid', '=', eventUuid)
    .executeTakeFirst();
  if (!r) return undefined;
  return {
    id: Number(r.id),
    provider: r.provider,
    trust_mode: r.trust_mode as TrustMode,
    verified: r.verified,
    received_at: new Date(r.received_at).toISOString(),
  };
}

/** Events per provider received at or after `since` (the dashboard's recent count). */
export async function recentCounts(db: Kysely<Database>, since: Date): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('log_events')
    .select(['provider', sql<string>`count(*)`.as('n')])
    .where('received_at', '>=', since)
    .groupBy('provider')
    .execute();
  return new Map(rows.map((r) => [r.provider, Number(r.n)]));
}

/** A webhook's deliveries as its rules see them, newest first (the save dry run, test_webhook_rules). */
export async function recentWebhookDeliveries(
  db: Kysely<Database>,
  webhookId: string,
  options: { readonly eventId?: number | undefined; readonly limit: number },
): Promise<
  {
    readonly id: number;
    readonly provider: string;
    readonly event_type: string | null;
    readonly content_type: string | null;
    readonly headers: Record<string, string>;
    readonly payload: Uint8Array;
    readonly received_at: string;
  }[]
> {
  let q = db
    .selectFrom('log_events')
    .select(['id', 'provider', 'event_type', 'content_type', 'headers', 'payload', 'received_at'])
    .where('provider', '=', `webhook:${webhookId}`);
  if (options.eventId !== undefined) q = q.where('id', '=', options.eventId);
  const rows = await q.orderBy('id', 'desc').limit(options.limit).execute();
  return rows.map((r) => ({ ...r, id: Number(r.id), received_at: new Date(r.received_at).toISOString() }));
}
