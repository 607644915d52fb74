import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { AGENT_EVENT_TYPES } from '../src/domain/agent/events.ts';
import { decodeOneOf, isOneOfTypes } from '../src/domain/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import { createAgentTables } from './agents.table.ts';
import type { Projection } from './engine/types.ts';
import { textSafe } from './pg-safe.ts';

export const agentsProjection: Projection = {
  name: 'agents',
  version: 1,
  tables: ['agents'],
  createTables: createAgentTables,
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
          description: textSafe(event.data.description),
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
