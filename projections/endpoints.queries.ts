import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '../src/db/database.ts';
import type { EndpointRow } from './endpoints.table.ts';
import { tableExists } from './engine/tables.ts';

/** What the operator API lists, and the look-ups of MCP sign-in. */
export function listEndpoints(db: Kysely<Database>, operator: string): Promise<EndpointRow[]> {
  return db
    .selectFrom('endpoints')
    .selectAll()
    .where('operator', '=', operator)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** The MCP server's credential lookup: the endpoint whose bearer hashes to this. */
export function findEndpointByTokenHash(
  db: Kysely<Database>,
  tokenHash: string,
): Promise<EndpointRow | undefined> {
  return db.selectFrom('endpoints').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export function findEndpointBySlug(db: Kysely<Database>, slug: string): Promise<EndpointRow | undefined> {
  return db.selectFrom('endpoints').selectAll().where('slug', '=', slug).executeTakeFirst();
}

/** Slugs of endpoints whose scope names `queue` (the reserved-queue check at start); [] before the table exists. */
export async function endpointsUsingQueue(db: Kysely<Database>, queue: string): Promise<string[]> {
  if (!(await tableExists(db, 'endpoints'))) return [];
  const rows = await db
    .selectFrom('endpoints')
    .select('slug')
    .where(sql<boolean>`queues @> ${JSON.stringify([queue])}::jsonb`)
    .orderBy('slug')
    .execute();
  return rows.map((r) => r.slug);
}

/** Slugs and queues of endpoints by id (the quarantine screen). */
export async function endpointScopes(
  db: Kysely<Database>,
  ids: readonly string[],
): Promise<Map<string, { readonly slug: string; readonly queues: readonly string[] }>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom('endpoints')
    .select(['id', 'slug', 'queues'])
    .where('id', 'in', [...ids])
    .execute();
  return new Map(rows.map((r) => [r.id, { slug: r.slug, queues: r.queues }]));
}
