import { type CopySpec, type CopyValue, copyRows } from '../src/db/copy.ts';
import { DELIVERIES_STREAM, DELIVERY_RECEIVED, eventIdFromRevision } from '../src/domain/delivery/events.ts';
import { decodeDeliveryMetadata, decodeEvent } from '../src/domain/events.ts';
import { RETENTION_STREAM } from '../src/domain/retention/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './engine/types.ts';
import { logRetainedFrom } from './log.queries.ts';
import { createLogTables, SEARCH_TEXT_MAX } from './log.table.ts';
import { textSafe } from './pg-safe.ts';

const decoder = new TextDecoder();

/** The payload as text for `q`: UTF-8 (a bad byte becomes U+FFFD), no NUL, at most SEARCH_TEXT_MAX characters. */
function searchText(payload: Uint8Array): string {
  const head = payload.byteLength > SEARCH_TEXT_MAX * 4 ? payload.subarray(0, SEARCH_TEXT_MAX * 4) : payload;
  return decoder.decode(head).slice(0, SEARCH_TEXT_MAX).replaceAll('\u0000', ' ');
}
/** Rows and payload bytes per COPY (each is one buffer in memory before it is sent). */
const COPY_ROWS_MAX = 2_000;
const COPY_BYTES_MAX = 32 * 1024 * 1024;

/**
 * A delivery's row, loaded with binary COPY (src/db/copy.ts): about half the server time of an
 * INSERT from unnested arrays, which PostgreSQL had to parse from text. `disposition` is the one a
 * rule decided when it comes in the same batch as the delivery (it is appended with it), else null.
 * No payload and no headers: they stay in the event alone (issue 20), and `search_text` becomes
 * the `search` vector on its way in (log.table.ts).
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
    ['payload_size', 'int4'],
    ['received_at', 'timestamptz'],
    ['endpoint_id', 'text'],
    ['search_text', 'text'],
    ['disposition', 'text'],
  ],
};

/** The endpoint a routed delivery (endpoint webhook, hand-off) belongs to; null for the rest. */
function endpointOf(route: Readonly<Record<string, unknown>> | undefined): string | null {
  const id = route?.endpoint_id;
  return typeof id === 'string' && id.length > 0 ? id : null;
}

function* logRows(
  deliveries: readonly RecordedEvent[],
  dispositions: ReadonlyMap<number, string>,
): Generator<CopyValue[]> {
  for (const e of deliveries) {
    const id = eventIdFromRevision(e.revision);
    const m = decodeDeliveryMetadata(e);
    const receivedAt = Date.parse(m.received_at);
    if (Number.isNaN(receivedAt)) throw new Error(`delivery ${e.id} has no valid received_at`);
    yield [
      id,
      e.id,
      e.position,
      m.provider,
      // Text columns refuse NUL, which a body field (type, id) may hold: projections/pg-safe.ts.
      textSafe(m.event_type ?? null),
      m.trust_mode,
      m.verified,
      textSafe(m.verify_detail ?? null),
      textSafe(m.external_id ?? null),
      textSafe(m.content_type ?? null),
      textSafe(m.source_ip ?? null),
      e.data.byteLength,
      receivedAt,
      endpointOf(m.route),
      searchText(e.data),
      dispositions.get(id) ?? null,
    ];
  }
}

const isDisposition = (e: Pick<RecordedEvent, 'streamId' | 'type'>): boolean =>
  e.type === 'DeliveryDisposed' && e.streamId.startsWith('dispositions-');

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

export const logProjection: Projection = {
  name: 'log',
  // 2: retention applied by the projection itself (log_retention). 3: search_text and search
  // (`q`). 4: endpoint_id, for the scope of list_events and GET /api/v1/events (issue 16 and
  // issue 21a each took 3 on their branches). 5: no payload, headers or search text: the bytes are
  // read from the event (issue 20).
  version: 5,
  tables: ['log_events', 'log_retention'],
  // Every delivery is one more row or counter: under ingest, fewer and larger batches (engine/types.ts).
  batchGrows: true,
  createTables: createLogTables,
  handles: (e) =>
    (e.streamId === DELIVERIES_STREAM && e.type === DELIVERY_RECEIVED) ||
    isDisposition(e) ||
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
    // What the rules decided, by delivery (the last word for each). A disposition is appended with
    // its delivery (src/todos/hand-off.ts), so it nearly always comes in the same batch: its row is
    // written with it, which spares an UPDATE of a fresh row and of each of its indexes.
    const dispositions = new Map<number, string>();
    for (const e of events) {
      if (!isDisposition(e)) continue;
      const event = decodeEvent(e);
      if (event.type === 'DeliveryDisposed') dispositions.set(event.data.event_id, event.data.disposition);
    }
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
      await copyRows(db, LOG_COPY, logRows(deliveries.slice(start, end), dispositions));
      start = end;
    }
    // A disposition whose delivery came in an earlier batch marks the row that batch wrote.
    const written = new Set(deliveries.map((e) => eventIdFromRevision(e.revision)));
    for (const [id, disposition] of dispositions) {
      if (written.has(id)) continue;
      await db.updateTable('log_events').set({ disposition }).where('id', '=', id).execute();
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
