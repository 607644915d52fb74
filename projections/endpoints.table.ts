import type { ColumnType, Kysely, Selectable } from 'kysely';

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
  /** Release 0.5.0: the friend edge whose approval minted it. */
  friend_id: ColumnType<string | null, string | null | undefined, string | null>;
  accept_friend_requests: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface EndpointTables {
  endpoints: EndpointsTable;
}

export type EndpointRow = Selectable<EndpointsTable>;

/** Creates the tables and their indexes (a rebuild creates them afresh in its shadow schema). */
export async function createEndpointTables(db: Pick<Kysely<unknown>, 'schema'>): Promise<void> {
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
    .addColumn('friend_id', 'text')
    .addColumn('accept_friend_requests', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  await db.schema
    .createIndex('endpoints_operator_idx')
    .ifNotExists()
    .on('endpoints')
    .columns(['operator', 'created_at'])
    .execute();
}
