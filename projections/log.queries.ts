import { type Kysely, type Selectable, type SelectQueryBuilder, sql } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { DELIVERIES_STREAM, type IngestAck, type TrustMode } from '../src/domain/delivery/events.ts';
import { decodeDeliveryMetadata } from '../src/domain/events.ts';
import { parseProviderName } from '../src/domain/provider/names.ts';
import { HooklineError } from '../src/errors.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { LogEventsTable } from './log.table.ts';
import { textSafe } from './pg-safe.ts';

const decoder = new TextDecoder();

/** What the log screens, GET /api/v1/events (via the CLI), the rules and the retention job read. */
/** The first delivery id the log keeps (1 when retention has pruned nothing yet). */
export async function logRetainedFrom(db: Kysely<Database>): Promise<number> {
  const row = await db.selectFrom('log_retention').select('before_id').where('id', '=', 1).executeTakeFirst();
  return row ? Number(row.before_id) : 1;
}
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

/** A delivery as the log read model keeps it: spec 2.3 but the headers and the payload, which stay in its event. */
export interface LoggedDelivery extends EventSummary {
  readonly verify_detail: string | null;
  readonly external_id: string | null;
  readonly content_type: string | null;
  readonly source_ip: string | null;
  readonly disposition: string | null;
}

/** Spec 2.3, plus the raw bytes (`payload` is their UTF-8 reading) and the disposition. */
export interface EventDetail extends LoggedDelivery {
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: string;
  readonly payload_bytes: Uint8Array;
}

/** Where delivery `id`'s event sits in the store: the `deliveries` stream, revision id - 1. */
export const deliveryEventOf = (id: number): { readonly streamId: string; readonly revision: bigint } => ({
  streamId: DELIVERIES_STREAM,
  revision: BigInt(id) - 1n,
});

/**
 * The detail of a logged delivery: its row, and the headers and payload from its event (read with
 * deliveryEventOf). Header values show a NUL as U+FFFD, as the read model used to store them.
 */
export function eventDetail(row: LoggedDelivery, event: RecordedEvent): EventDetail {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(decodeDeliveryMetadata(event).headers))
    headers[textSafe(k)] = textSafe(v);
  const bytes = event.data;
  return { ...row, headers, payload: decoder.decode(bytes), payload_bytes: bytes };
}

/**
 * EventDetail as the API and MCP send it (spec 2.3): the payload as UTF-8 text when the bytes
 * are UTF-8, else base64, and `encoding` says which; plus the disposition (release 0.4.0: where
 * an endpoint webhook's rules sent it; null elsewhere).
 */
export interface EventDetailOut extends EventSummary {
  readonly verify_detail: string | null;
  readonly external_id: string | null;
  readonly content_type: string | null;
  readonly source_ip: string | null;
  readonly headers: Readonly<Record<string, string>>;
  readonly payload: string;
  readonly encoding: 'utf-8' | 'base64';
  readonly disposition: string | null;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function eventDetailOut(e: EventDetail): EventDetailOut {
  let payload: string;
  let encoding: EventDetailOut['encoding'] = 'utf-8';
  try {
    payload = strictUtf8.decode(e.payload_bytes);
  } catch {
    payload = Buffer.from(e.payload_bytes).toString('base64');
    encoding = 'base64';
  }
  return {
    id: e.id,
    provider: e.provider,
    event_type: e.event_type,
    trust_mode: e.trust_mode,
    verified: e.verified,
    payload_size: e.payload_size,
    received_at: e.received_at,
    verify_detail: e.verify_detail,
    external_id: e.external_id,
    content_type: e.content_type,
    source_ip: e.source_ip,
    headers: e.headers,
    payload,
    encoding,
    disposition: e.disposition,
  };
}

export interface LogFilters {
  readonly provider?: string | undefined;
  readonly event_type?: string | undefined;
  /** An ISO-8601 timestamp or an event id: an inclusive lower bound. */
  readonly since?: string | undefined;
  /** Only events with a greater id (the screens' live rows: what is newer than the rows shown). */
  readonly after_id?: number | undefined;
  /** Full text over payloads and event types: words (all must match), "a phrase", -not, or. */
  readonly q?: string | undefined;
}

export interface LogPage {
  readonly events: readonly EventSummary[];
  /** Opaque; pass back as `cursor` for the next (older) page, null on the last page. */
  readonly next_cursor: string | null;
}

/**
 * Whose deliveries a reader may see. Everyone sees the instance receivers' (signed, generic,
 * broker: no endpoint). An endpoint also sees its own webhooks' deliveries and its own
 * hand-offs; an operator, those of every endpoint of theirs. Nobody else's (spec 1.1, 4.1).
 * No scope: the whole log (the screens, which sit behind the instance's own authentication).
 */
export type EventScope =
  | { readonly endpointId: string; readonly operator?: undefined }
  | { readonly operator: string; readonly endpointId?: undefined };

const INSTANCE_KINDS_SQL = sql<boolean>`(endpoint_id is null and provider not like 'webhook:%' and provider <> 'operator')`;

function visibleTo<QB extends SelectQueryBuilder<Database, 'log_events', object>>(
  q: QB,
  scope: EventScope | undefined,
): QB {
  if (scope === undefined) return q;
  if (scope.endpointId !== undefined) {
    return q.where((eb) => eb.or([INSTANCE_KINDS_SQL, eb('endpoint_id', '=', scope.endpointId)])) as QB;
  }
  return q.where((eb) =>
    eb.or([
      INSTANCE_KINDS_SQL,
      eb(
        'endpoint_id',
        'in',
        eb.selectFrom('endpoints').select('endpoints.id').where('endpoints.operator', '=', scope.operator),
      ),
    ]),
  ) as QB;
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
  scope?: EventScope,
): Promise<LogPage> {
  const size = parseLimit(limit);
  let q = visibleTo(
    db
      .selectFrom('log_events')
      .select(['id', 'provider', 'event_type', 'trust_mode', 'verified', 'payload_size', 'received_at']),
    scope,
  );
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
  if (filters.after_id !== undefined) q = q.where('id', '>', BigInt(filters.after_id));
  const text = filters.q?.trim();
  if (text) {
    if (text.length > 200) throw invalid('q', 'q is longer than 200 characters');
    // PostgreSQL text cannot hold a NUL: refused here rather than failing in the driver.
    if (text.includes('\u0000')) throw invalid('q', 'q must not contain a NUL character');
    q = q.where(sql<boolean>`search @@ websearch_to_tsquery('simple'::regconfig, ${text})`);
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

/**
 * Spec 4.6 but the bytes (eventDetail adds them); undefined when no event has that id (or the id
 * is not an integer), or the scope does not see it.
 */
export async function getLoggedDelivery(
  db: Kysely<Database>,
  id: number | bigint | string,
  scope?: EventScope,
): Promise<LoggedDelivery | undefined> {
  const text = String(id);
  if (!/^[0-9]{1,18}$/.test(text)) return undefined;
  const r = await visibleTo(
    db
      .selectFrom('log_events')
      .select([
        'id',
        'provider',
        'event_type',
        'trust_mode',
        'verified',
        'payload_size',
        'received_at',
        'verify_detail',
        'external_id',
        'content_type',
        'source_ip',
        'disposition',
      ]),
    scope,
  )
    .where('id', '=', BigInt(text))
    .executeTakeFirst();
  if (!r) return undefined;
  return {
    ...toSummary(r),
    verify_detail: r.verify_detail,
    external_id: r.external_id,
    content_type: r.content_type,
    source_ip: r.source_ip,
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

/**
 * A webhook's deliveries as its rules see them, newest first (the save dry run,
 * test_webhook_rules); their headers and payloads are in their events (deliveryEventOf).
 */
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
    readonly received_at: string;
  }[]
> {
  let q = db
    .selectFrom('log_events')
    .select(['id', 'provider', 'event_type', 'content_type', 'received_at'])
    .where('provider', '=', `webhook:${webhookId}`);
  if (options.eventId !== undefined) q = q.where('id', '=', options.eventId);
  const rows = await q.orderBy('id', 'desc').limit(options.limit).execute();
  return rows.map((r) => ({ ...r, id: Number(r.id), received_at: new Date(r.received_at).toISOString() }));
}

/** The first delivery received at or after `cutoff` (retention by age); undefined when none is. */
export async function firstDeliveryIdSince(db: Kysely<Database>, cutoff: Date): Promise<number | undefined> {
  const row = await db
    .selectFrom('log_events')
    .select('id')
    .where('received_at', '>=', cutoff)
    .orderBy('received_at', 'asc')
    .orderBy('id', 'asc')
    .limit(1)
    .executeTakeFirst();
  return row ? Number(row.id) : undefined;
}

/** The lowest and the highest delivery id the log holds (null when it is empty). */
export async function logIdRange(
  db: Kysely<Database>,
): Promise<{ readonly min: number | null; readonly max: number | null }> {
  const row = await db
    .selectFrom('log_events')
    .select((eb) => [eb.fn.min('id').as('min'), eb.fn.max('id').as('max')])
    .executeTakeFirst();
  return {
    min: row?.min == null ? null : Number(row.min),
    max: row?.max == null ? null : Number(row.max),
  };
}

/** Deletes up to `limit` of the oldest rows below `belowId` (retention prunes in small batches); the count deleted. */
export async function deleteLogRowsBelow(
  db: Kysely<Database>,
  belowId: number,
  limit: number,
): Promise<number> {
  const result = await sql`
    delete from log_events where id in (
      select id from log_events where id < ${belowId} order by id limit ${limit}
    )`.execute(db);
  return Number(result.numAffectedRows ?? 0n);
}

/** A delivery to replay: its provider tells whose webhook it was; its bytes are in its event (deliveryEventOf). */
export function findDeliveryToReplay(db: Kysely<Database>, id: number) {
  return db
    .selectFrom('log_events')
    .select(['id', 'provider', 'content_type'])
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Deliveries of the given providers (an endpoint's webhooks), newest first, keyset-paginated (list_webhook_events). */
export function pageWebhookEvents(
  db: Kysely<Database>,
  filter: {
    readonly providers: readonly string[];
    readonly disposition?: string | undefined;
    readonly before?: { readonly at: Date; readonly id: bigint } | undefined;
    readonly limit: number;
  },
) {
  let q = db
    .selectFrom('log_events')
    .select([
      'id',
      'provider',
      'event_type',
      'trust_mode',
      'verified',
      'payload_size',
      'received_at',
      'disposition',
    ])
    .where('provider', 'in', [...filter.providers]);
  if (filter.disposition) q = q.where('disposition', '=', filter.disposition);
  const before = filter.before;
  if (before) q = q.where((eb) => eb(eb.refTuple('received_at', 'id'), '<', eb.tuple(before.at, before.id)));
  return q.orderBy('received_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}
