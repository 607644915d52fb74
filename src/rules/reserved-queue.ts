import { endpointsUsingQueue } from '../../projections/endpoints.queries.ts';
import { todosUsingQueue } from '../../projections/todos.queries.ts';
import { webhooksUsingQueue } from '../../projections/webhooks.queries.ts';
import type { DB } from '../db/database.ts';
import { QUARANTINE } from '../domain/queue.ts';

/** How many offenders of each kind the error names (the rest are counted). */
const SHOWN = 5;

function describe(kind: string, ids: readonly string[]): string {
  const shown = ids.slice(0, SHOWN).join(', ');
  return ids.length > SHOWN ? `${kind} ${shown} and ${ids.length - SHOWN} more` : `${kind} ${shown}`;
}

/**
 * What already uses the reserved queue name `quarantine` (spec 9, release 0.4.0 item 7), read
 * from the read models as they stand: endpoint scopes, webhook target queues, and todos on that
 * queue that quarantine did not put there. A held todo is always a `webhook` todo created by the
 * ingest path (and usually has its `quarantine` row already); a webhook todo that landed there
 * because its webhook targeted `quarantine` is reported through that webhook. Routes and rules
 * live only in the webhook streams and their save path refuses the name, so they are not read.
 * A table that does not exist yet (a fresh database) uses nothing.
 */
export async function reservedQueueUses(db: DB): Promise<string[]> {
  const uses: string[] = [];
  const endpoints = await endpointsUsingQueue(db, QUARANTINE);
  if (endpoints.length > 0) uses.push(describe('endpoint scope', endpoints));
  const webhooks = await webhooksUsingQueue(db, QUARANTINE);
  if (webhooks.length > 0) uses.push(describe('webhook target', webhooks));
  const todos = await todosUsingQueue(db, QUARANTINE);
  if (todos.length > 0) uses.push(describe('todo', todos));
  return uses;
}

/**
 * Refuses to start while anything uses the reserved name: `hookline serve` exits non-zero with
 * this message, and the operator renames or revokes what it names before starting again.
 */
export async function assertQuarantineReserved(db: DB): Promise<void> {
  const uses = await reservedQueueUses(db);
  if (uses.length === 0) return;
  throw new Error(
    `the queue name "${QUARANTINE}" is reserved for held deliveries since 0.4.0, but it is already used by: ${uses.join('; ')}. Revoke or re-vend these on the previous version, then start again.`,
  );
}
