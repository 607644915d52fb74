import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { tableExists } from './engine/tables.ts';
import type { WebhookRow } from './webhooks.table.ts';

/** What the ingest path and the webhook verbs read. */
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

/** Ids of webhooks whose target queue is `queue` (the reserved-queue check at start); [] before the table exists. */
export async function webhooksUsingQueue(db: Kysely<Database>, queue: string): Promise<string[]> {
  if (!(await tableExists(db, 'webhooks'))) return [];
  const rows = await db
    .selectFrom('webhooks')
    .select('id')
    .where('queue', '=', queue)
    .orderBy('id')
    .execute();
  return rows.map((r) => r.id);
}

/** Names of webhooks by id (the quarantine screen). */
export async function webhookNames(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('webhooks')
    .select(['id', 'name'])
    .where('id', 'in', [...ids])
    .execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** An operator's webhooks, oldest first (the console's webhooks screen). */
export function listOperatorWebhooks(db: Kysely<Database>, operator: string): Promise<WebhookRow[]> {
  return db
    .selectFrom('webhooks')
    .selectAll()
    .where('operator', '=', operator)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export function findWebhook(db: Kysely<Database>, id: string): Promise<WebhookRow | undefined> {
  return db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirst();
}
