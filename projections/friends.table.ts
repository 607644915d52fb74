import type { ColumnType, Kysely, Selectable } from 'kysely';

/**
 * One row per friend edge (stream `friend-<id>`): the request, its state and, once approved, the
 * grant and the friend endpoint it minted. The credential never enters this table: only whether
 * the requester has collected it. Name, description and message are untrusted text.
 */
export interface FriendsTable {
  id: string;
  status: 'pending' | 'approved' | 'declined' | 'revoked' | 'withdrawn' | 'expired';
  approver_endpoint_id: string;
  approver_slug: string;
  approver_operator: string;
  requester_name: string;
  requester_description: string | null;
  requester_card_url: string | null;
  requester_endpoint_id: string | null;
  requester_operator: string | null;
  requested_verbs: ColumnType<string[], string, string>;
  granted_verbs: ColumnType<string[] | null, string | null, string | null>;
  queue: string;
  message: string | null;
  via: 'a2a' | 'local';
  friend_endpoint_id: string | null;
  friend_slug: string | null;
  approver_queue: string | null;
  credential_collected: boolean;
  requested_at: ColumnType<Date, Date, Date>;
  expires_at: ColumnType<Date, Date, Date>;
  approved_at: ColumnType<Date | null, Date | null, Date | null>;
  ended_at: ColumnType<Date | null, Date | null, Date | null>;
  ended_by: string | null;
  /** The last todo handed across the edge (create_for, either way). */
  last_activity_at: ColumnType<Date | null, Date | null, Date | null>;
}

export interface FriendTables {
  friends: FriendsTable;
}

export type FriendRow = Selectable<FriendsTable>;

export async function createFriendTables(db: Pick<Kysely<unknown>, 'schema'>): Promise<void> {
  await db.schema
    .createTable('friends')
    .ifNotExists()
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('approver_endpoint_id', 'text', (c) => c.notNull())
    .addColumn('approver_slug', 'text', (c) => c.notNull())
    .addColumn('approver_operator', 'text', (c) => c.notNull())
    .addColumn('requester_name', 'text', (c) => c.notNull())
    .addColumn('requester_description', 'text')
    .addColumn('requester_card_url', 'text')
    .addColumn('requester_endpoint_id', 'text')
    .addColumn('requester_operator', 'text')
    .addColumn('requested_verbs', 'jsonb', (c) => c.notNull())
    .addColumn('granted_verbs', 'jsonb')
    .addColumn('queue', 'text', (c) => c.notNull())
    .addColumn('message', 'text')
    .addColumn('via', 'text', (c) => c.notNull())
    .addColumn('friend_endpoint_id', 'text')
    .addColumn('friend_slug', 'text')
    .addColumn('approver_queue', 'text')
    .addColumn('credential_collected', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('requested_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('approved_at', 'timestamptz')
    .addColumn('ended_at', 'timestamptz')
    .addColumn('ended_by', 'text')
    .addColumn('last_activity_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('friends_approver_operator_idx')
    .ifNotExists()
    .on('friends')
    .columns(['approver_operator', 'requested_at'])
    .execute();
  await db.schema
    .createIndex('friends_requester_operator_idx')
    .ifNotExists()
    .on('friends')
    .columns(['requester_operator', 'requested_at'])
    .execute();
  await db.schema
    .createIndex('friends_friend_endpoint_idx')
    .ifNotExists()
    .on('friends')
    .column('friend_endpoint_id')
    .execute();
  await db.schema
    .createIndex('friends_approver_endpoint_idx')
    .ifNotExists()
    .on('friends')
    .column('approver_endpoint_id')
    .execute();
}
