import { type ColumnType, type Kysely, sql } from 'kysely';

/** How much of a payload `q` searches (a tsvector holds at most 1 MB). */
export const SEARCH_TEXT_MAX = 64 * 1024;

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
  payload_size: number;
  received_at: ColumnType<Date, Date, Date>;
  disposition: string | null;
  /**
   * The endpoint a delivery belongs to: the owner of the webhook it came to, or the endpoint a
   * hand-off was pushed to (the delivery's `route.endpoint_id`). Null for the instance receivers
   * (signed, generic, broker), whose deliveries every endpoint may read.
   */
  endpoint_id: string | null;
  /**
   * Input only: the payload as text, its first SEARCH_TEXT_MAX characters, which the insert trigger
   * turns into `search` and stores as null. The payload itself is kept once, in its event: the
   * detail, MCP `get_event` and replay read it from the store (src/deliveries/read.ts).
   */
  search_text: ColumnType<null, string, never>;
  /** What `q` searches: the full-text vector of the event type and the payload's text ('simple' configuration). */
  search: ColumnType<string, never, never>;
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

/** Creates the tables and their indexes (a rebuild creates them afresh in its shadow schema). */
export async function createLogTables(db: Pick<Kysely<unknown>, 'schema' | 'getExecutor'>): Promise<void> {
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
    .addColumn('payload_size', 'integer', (c) => c.notNull())
    .addColumn('received_at', 'timestamptz', (c) => c.notNull())
    .addColumn('disposition', 'text')
    .addColumn('endpoint_id', 'text')
    .addColumn('search_text', 'text')
    // Full text (measured against pg_trgm, bench/README.md "Search (`q`)"): 'simple' splits words and
    // folds case without stemming, so ids, event names and JSON values match as written.
    .addColumn('search', sql`tsvector`, (c) => c.notNull())
    .execute();
  // The vector from search_text, which is then stored as null: the payload's words stay searchable
  // without a second copy of its text (issue 20; measured in bench/README.md). The function lives in
  // `public`, so dropping a rebuild's shadow schema never drops it; the table is unqualified, so it
  // is the one being created: the live one, or the shadow's in a rebuild (first in its search_path).
  await sql`
    create or replace function public.log_events_search_vector() returns trigger
    language plpgsql as $$
    begin
      new.search := to_tsvector('simple'::regconfig, coalesce(new.event_type, '') || ' ' || coalesce(new.search_text, ''));
      new.search_text := null;
      return new;
    end
    $$`.execute(db);
  await sql`
    create or replace trigger log_events_search before insert on log_events
    for each row execute function public.log_events_search_vector()`.execute(db);
  await db.schema
    .createIndex('log_events_search_idx')
    .ifNotExists()
    .on('log_events')
    .using('gin')
    .column('search')
    .execute();
  // One index per query shape of spec 4.5 (ordering received_at desc, id desc, optional
  // provider and event_type filters); the provider one also serves the 24 h recent counts.
  const indexes: [string, string[]][] = [
    ['log_events_received_idx', ['received_at desc', 'id desc']],
    ['log_events_provider_idx', ['provider', 'received_at desc', 'id desc']],
    ['log_events_type_idx', ['event_type', 'received_at desc', 'id desc']],
    ['log_events_provider_type_idx', ['provider', 'event_type', 'received_at desc', 'id desc']],
    // An endpoint's own deliveries (list_events, GET /api/v1/events).
    ['log_events_endpoint_idx', ['endpoint_id', 'received_at desc', 'id desc']],
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
}
