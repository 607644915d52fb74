import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll } from 'vitest';
import type { Projection } from '../../projections/engine/types.ts';
import type { DB } from '../../src/db/database.ts';
import { openPostgres, type SqlDatabase } from '../../src/db/open.ts';
import {
  DELIVERIES_STREAM,
  DELIVERY_RECEIVED,
  type DeliveryMetadata,
} from '../../src/domain/delivery/events.ts';
import type { DomainEvent } from '../../src/domain/events.ts';
import { encodeEvent } from '../../src/eventstore/codec.ts';
import type { RecordedEvent } from '../../src/eventstore/port.ts';
import { createTestDatabase, type TestDatabase } from './services.ts';

/**
 * Given events, then rows: the one shape of every read-model test (style.md §15, after emmett's
 * projection specs), against a real PostgreSQL. Each `given` starts from fresh, empty tables
 * (the projection's own DDL), applies the events the way the runner does (the `handles` filter,
 * then `apply` in one transaction), and hands the database to the assertion, which reads rows
 * directly or through the read model's query functions.
 *
 *   const spec = projectionSpec(agentsProjection);
 *   await spec.given(event('agent-ag_1', registered)).thenRows(async (db) => { ... });
 *
 * Call it at the top of a `describe`: it opens a database of its own for the file and drops it after.
 */
export function projectionSpec(projection: Projection) {
  let database: TestDatabase | undefined;
  let store: SqlDatabase | undefined;
  beforeAll(async () => {
    database = await createTestDatabase('hookline_projection');
    store = openPostgres(database.url, { max: 2 });
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });
  const db = (): DB => {
    if (!store) throw new Error('projectionSpec: the database is not open (call it inside describe)');
    return store.db;
  };

  /** Each batch applied in a transaction of its own, in order, as the runner applies successive batches. */
  const givenBatches = (...batches: readonly (readonly RecordedEvent[])[]) => ({
    async thenRows(check: (db: DB) => Promise<void>): Promise<void> {
      const tables = projection.tables.map((t) => sql.id(t));
      await sql`drop table if exists ${sql.join(tables)}`.execute(db());
      await projection.createTables(db());
      for (const events of batches) {
        const handled = projection.handles ? events.filter((e) => projection.handles!(e)) : events;
        await db()
          .transaction()
          .execute((trx) => projection.apply(trx, handled));
      }
      await check(db());
    },
  });

  return {
    given: (...events: readonly RecordedEvent[]) => givenBatches(events),
    givenBatches,
  };
}

let position = 0;
const revisions = new Map<string, bigint>();

/** A domain event as the store would hand it to a projection: the next revision of its stream. */
export function recorded(streamId: string, event: DomainEvent, createdAt = new Date()): RecordedEvent {
  const data = encodeEvent(event);
  return stored(streamId, event.type, data.data, null, 'application/json', createdAt);
}

/** A delivery as the recorder stores it: the raw body, the metadata as JSON. */
export function delivery(
  metadata: Partial<DeliveryMetadata> & Pick<DeliveryMetadata, 'provider' | 'received_at'>,
  body: string | Uint8Array = '{}',
): RecordedEvent {
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  const full: DeliveryMetadata = {
    family: 'webhook',
    trust_mode: 'signed',
    verified: true,
    verify_detail: null,
    event_type: null,
    external_id: null,
    content_type: 'application/json',
    source_ip: null,
    headers: {},
    payload_size: bytes.byteLength,
    ...metadata,
  };
  return stored(
    DELIVERIES_STREAM,
    DELIVERY_RECEIVED,
    bytes,
    new TextEncoder().encode(JSON.stringify(full)),
    'application/octet-stream',
    new Date(full.received_at),
  );
}

/** Streams start again at revision 0 (a fresh log) for the next spec. */
export function resetStreams(): void {
  revisions.clear();
}

function stored(
  streamId: string,
  type: string,
  data: Uint8Array,
  metadata: Uint8Array | null,
  contentType: RecordedEvent['contentType'],
  createdAt: Date,
): RecordedEvent {
  const revision = revisions.has(streamId) ? revisions.get(streamId)! + 1n : 0n;
  revisions.set(streamId, revision);
  position++;
  return {
    id: randomUUID(),
    streamId,
    revision,
    position: `1:${position}`,
    type,
    data,
    metadata,
    contentType,
    createdAt,
  };
}
