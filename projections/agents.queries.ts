import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import type { AgentRow } from './agents.table.ts';

/** What GET /api/v1/agents reads. */
export function listAgents(db: Kysely<Database>, operator: string): Promise<AgentRow[]> {
  return db
    .selectFrom('agents')
    .selectAll()
    .where('operator', '=', operator)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
