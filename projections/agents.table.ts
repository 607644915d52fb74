import type { ColumnType, Kysely, Selectable } from 'kysely';

/** One row per agent (stream `agent-<id>`): GET /api/v1/agents reads it. */
export interface AgentsTable {
  id: string;
  operator: string;
  name: string;
  description: string | null;
  created_at: ColumnType<Date, Date, Date>;
}

export interface AgentTables {
  agents: AgentsTable;
}

export type AgentRow = Selectable<AgentsTable>;

/** Creates the tables and their indexes (a rebuild creates them afresh in its shadow schema). */
export async function createAgentTables(db: Pick<Kysely<unknown>, 'schema'>): Promise<void> {
  await db.schema
    .createTable('agents')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('operator', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('agents_operator_idx')
    .ifNotExists()
    .on('agents')
    .columns(['operator', 'created_at'])
    .execute();
}
