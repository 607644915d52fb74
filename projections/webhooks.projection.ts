import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { decodeEvent } from '../src/domain/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './engine/types.ts';
import { createWebhookTables } from './webhooks.table.ts';

export const webhooksProjection: Projection = {
  name: 'webhooks',
  version: 1,
  tables: ['webhooks'],
  createTables: createWebhookTables,
  handles: (e) => e.streamId.startsWith('webhook-') && e.type === 'WebhookCreated',
  async apply(db, events) {
    for (const e of events) await applyWebhookEvent(db, e);
  },
};

async function applyWebhookEvent(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  const event = decodeEvent(e);
  switch (event.type) {
    case 'WebhookCreated': {
      const d = event.data;
      await db
        .insertInto('webhooks')
        .values({
          id: d.webhook_id,
          endpoint_id: d.endpoint_id,
          operator: d.operator,
          name: d.name,
          queue: d.queue,
          trust_mode: d.trust_mode,
          token_hash: d.token_hash,
          created_at: new Date(d.created_at),
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      return;
    }
    default:
      // Its other events (signing secret, rules and routes) are not in this read model.
      return;
  }
}
