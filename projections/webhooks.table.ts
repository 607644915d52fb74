import type { ColumnType, Kysely, Selectable } from 'kysely';

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

/** Creates the tables and their indexes (a rebuild creates them afresh in its shadow schema). */
export async function createWebhookTables(db: Pick<Kysely<unknown>, 'schema'>): Promise<void> {
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
}
