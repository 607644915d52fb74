import type { ColumnType, Kysely, Selectable } from 'kysely';
import { sql } from 'kysely';
import type { StoredRoute, StoredRule } from '../src/domain/webhook/events.ts';

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
  /** Its signing scheme (`standard-webhooks`, `codehost`, `payments` or `chat`) once a secret is set, and whether a signature is required. */
  signing_scheme: ColumnType<string | null, string | null | undefined, string | null>;
  signature_required: ColumnType<boolean, boolean | undefined, boolean>;
  /** Its rules (id and source, in order) at `rules_version`, and its routes: the console shows them. */
  rules_version: ColumnType<number, number | undefined, number>;
  rules: ColumnType<StoredRule[], string | undefined, string>;
  routes: ColumnType<StoredRoute[], string | undefined, string>;
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
    .addColumn('signing_scheme', 'text')
    .addColumn('signature_required', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('rules_version', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('rules', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('routes', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
  await db.schema
    .createIndex('webhooks_endpoint_idx')
    .ifNotExists()
    .on('webhooks')
    .columns(['endpoint_id', 'created_at'])
    .execute();
  await db.schema
    .createIndex('webhooks_operator_idx')
    .ifNotExists()
    .on('webhooks')
    .columns(['operator', 'created_at'])
    .execute();
}
