import type { ColumnType, Kysely, Selectable } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { ENDPOINT_EVENT_TYPES } from '../src/domain/endpoint/events.ts';
import { decodeOneOf, isOneOfTypes } from '../src/domain/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './types.ts';

/**
 * One row per vended endpoint (stream `endpoint-<id>`). `token_hash` is the SHA-256 (hex) of the
 * endpoint bearer: the MCP server finds the endpoint by hashing the bearer it is shown.
 */
export interface EndpointsTable {
  id: string;
  slug: string;
  agent_id: string;
  agent_name: string;
  operator: string;
  state: 'active' | 'revoked';
  queues: ColumnType<string[], string, string>;
  verbs: ColumnType<string[], string, string>;
  token_hash: string;
  webhook_id: string;
  replay_targets: ColumnType<string[], string, string>;
  expires_at: ColumnType<Date | null, Date | null, Date | null>;
  created_at: ColumnType<Date, Date, Date>;
  revoked_at: ColumnType<Date | null, Date | null, Date | null>;
}

export interface EndpointTables {
  endpoints: EndpointsTable;
}

export type EndpointRow = Selectable<EndpointsTable>;

export const endpointsProjection: Projection = {
  name: 'endpoints',
  version: 1,
  tables: ['endpoints'],
  async createTables(db) {
    await db.schema
      .createTable('endpoints')
      .ifNotExists()
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('slug', 'text', (c) => c.notNull().unique())
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('agent_name', 'text', (c) => c.notNull())
      .addColumn('operator', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('queues', 'jsonb', (c) => c.notNull())
      .addColumn('verbs', 'jsonb', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('webhook_id', 'text', (c) => c.notNull())
      .addColumn('replay_targets', 'jsonb', (c) => c.notNull())
      .addColumn('expires_at', 'timestamptz')
      .addColumn('created_at', 'timestamptz', (c) => c.notNull())
      .addColumn('revoked_at', 'timestamptz')
      .execute();
    await db.schema
      .createIndex('endpoints_operator_idx')
      .ifNotExists()
      .on('endpoints')
      .columns(['operator', 'created_at'])
      .execute();
  },
  handles: (e) => e.streamId.startsWith('endpoint-') && isOneOfTypes(ENDPOINT_EVENT_TYPES, e.type),
  async apply(db, events) {
    for (const e of events) await applyEndpointEvent(db, e);
  },
};

async function applyEndpointEvent(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  const event = decodeOneOf(e, ENDPOINT_EVENT_TYPES);
  switch (event.type) {
    case 'EndpointVended': {
      const d = event.data;
      await db
        .insertInto('endpoints')
        .values({
          id: d.endpoint_id,
          slug: d.slug,
          agent_id: d.agent_id,
          agent_name: d.agent_name,
          operator: d.operator,
          state: 'active',
          queues: JSON.stringify(d.queues),
          verbs: JSON.stringify(d.verbs),
          token_hash: d.token_hash,
          webhook_id: d.webhook_id,
          replay_targets: JSON.stringify(d.replay_targets),
          expires_at: d.expires_at ? new Date(d.expires_at) : null,
          created_at: new Date(d.vended_at),
          revoked_at: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      return;
    }
    case 'EndpointRevoked':
      await db
        .updateTable('endpoints')
        .set({ state: 'revoked', revoked_at: new Date(event.data.revoked_at) })
        .where('id', '=', event.data.endpoint_id)
        .execute();
      return;
    default: {
      const never: never = event;
      return never;
    }
  }
}

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
