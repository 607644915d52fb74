import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { DELIVERIES_STREAM, DELIVERY_RECEIVED } from '../src/domain/delivery/events.ts';
import { decodeDeliveryMetadata, decodeOneOf, isOneOfTypes } from '../src/domain/events.ts';
import { PROVIDER_EVENT_TYPES } from '../src/domain/provider/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './engine/types.ts';
import { createProviderTables, defaultRow } from './providers.table.ts';

async function applyProviderEvent(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  const event = decodeOneOf(e, PROVIDER_EVENT_TYPES);
  switch (event.type) {
    case 'GenericProviderCreated': {
      const d = event.data;
      const row = {
        ...defaultRow(d.name),
        trust_mode: d.trust_mode,
        enabled: false,
        secret_status: d.trust_mode === 'token' ? 'configured' : 'none-by-design',
        token_hash: d.token_hash,
        created_at: new Date(d.created_at),
      };
      await db
        .insertInto('providers')
        .values(row)
        .onConflict((oc) =>
          oc.column('name').doUpdateSet({
            trust_mode: row.trust_mode,
            enabled: false,
            secret_status: row.secret_status,
            token_hash: row.token_hash,
            created_at: row.created_at,
          }),
        )
        .execute();
      return;
    }
    case 'ProviderEnabled':
    case 'ProviderDisabled': {
      const enabled = event.type === 'ProviderEnabled';
      await db
        .insertInto('providers')
        .values({ ...defaultRow(event.data.name), enabled })
        .onConflict((oc) => oc.column('name').doUpdateSet({ enabled }))
        .execute();
      return;
    }
    default: {
      const never: never = event;
      throw new Error(`unhandled provider event ${JSON.stringify(never)}`);
    }
  }
}

export const providersProjection: Projection = {
  name: 'providers',
  version: 1,
  tables: ['providers'],
  // Every delivery is one more row or counter: under ingest, fewer and larger batches (engine/types.ts).
  batchGrows: true,
  createTables: createProviderTables,
  handles: (e) =>
    (e.streamId === DELIVERIES_STREAM && e.type === DELIVERY_RECEIVED) ||
    (e.streamId.startsWith('provider-') && isOneOfTypes(PROVIDER_EVENT_TYPES, e.type)),
  async apply(db, events) {
    // Counters are summed per batch (one upsert a provider); provider events apply in order.
    const counters = new Map<string, { count: number; last: Date }>();
    for (const e of events) {
      if (e.streamId === DELIVERIES_STREAM && e.type === DELIVERY_RECEIVED) {
        const m = decodeDeliveryMetadata(e);
        const at = new Date(m.received_at);
        const c = counters.get(m.provider);
        if (!c) counters.set(m.provider, { count: 1, last: at });
        else {
          c.count++;
          if (at > c.last) c.last = at;
        }
      } else if (e.streamId.startsWith('provider-')) {
        await applyProviderEvent(db, e);
      }
    }
    for (const [name, c] of counters) {
      await db
        .insertInto('providers')
        .values({ ...defaultRow(name), last_event_at: c.last, event_count: c.count })
        .onConflict((oc) =>
          oc.column('name').doUpdateSet((eb) => ({
            event_count: eb('providers.event_count', '+', c.count),
            last_event_at: eb.fn('greatest', [eb.ref('providers.last_event_at'), eb.val(c.last)]),
          })),
        )
        .execute();
    }
  },
};
