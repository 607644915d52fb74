import type { ColumnType, Kysely, Selectable } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { decodeEvent } from '../src/domain/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './types.ts';

/**
 * One row per endpoint-owned webhook (stream `webhook-<id>`). `token_hash` is the SHA-256 (hex)
 * of the ingest URL's token: `/webhooks/w/<token>` finds its webhook by hashing the token.
 */
export interface WebhooksTable {
  id: string;
  endpoint_id: string;
  operator: string;
  name: string;
  queue: string;
  trust_mode: string;
  token_hash: string;
  created_at: ColumnType<Date, Date, Date>;
}

export interface WebhookTables {
  webhooks: WebhooksTable;
}

export type WebhookRow = Selectable<WebhooksTable>;

export const webhooksProjection: Projection = {
  name: 'webhooks',
  version: 1,
  tables: ['webhooks'],
  async createTables(db) {
    await db.schema
      .createTable('webhooks')
      .ifNotExists()
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('endpoint_id', 'text', (c) => c.notNull())
      .addColumn('operator', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('queue', 'text', (c) => c.notNull())
      .addColumn('trust_mode', 'text', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', 'timestamptz', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('webhooks_endpoint_idx')
      .ifNotExists()
      .on('webhooks')
      .columns(['endpoint_id', 'created_at'])
      .execute();
  },
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

/** The ingest path's lookup: the webhook whose URL token hashes to this. */
export function findWebhookByTokenHash(
  db: Kysely<Database>,
  tokenHash: string,
): Promise<WebhookRow | undefined> {
  return db.selectFrom('webhooks').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export function listWebhooksOfEndpoint(db: Kysely<Database>, endpointId: string): Promise<WebhookRow[]> {
  return db
    .selectFrom('webhooks')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
