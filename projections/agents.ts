import type { ColumnType, Kysely, Selectable } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { AGENT_EVENT_TYPES } from '../src/domain/agent/events.ts';
import { decodeOneOf, isOneOfTypes } from '../src/domain/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './types.ts';

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

export const agentsProjection: Projection = {
  name: 'agents',
  version: 1,
  tables: ['agents'],
  async createTables(db) {
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
  },
  handles: (e) => e.streamId.startsWith('agent-') && isOneOfTypes(AGENT_EVENT_TYPES, e.type),
  async apply(db, events) {
    for (const e of events) await applyAgentEvent(db, e);
  },
};

async function applyAgentEvent(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  const event = decodeOneOf(e, AGENT_EVENT_TYPES);
  switch (event.type) {
    case 'AgentRegistered':
      await db
        .insertInto('agents')
        .values({
          id: event.data.agent_id,
          operator: event.data.operator,
          name: event.data.name,
          description: event.data.description,
          created_at: new Date(event.data.registered_at),
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      return;
    default: {
      const never: never = event.type;
      return never;
    }
  }
}

export function listAgents(db: Kysely<Database>, operator: string): Promise<AgentRow[]> {
  return db
    .selectFrom('agents')
    .selectAll()
    .where('operator', '=', operator)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}
