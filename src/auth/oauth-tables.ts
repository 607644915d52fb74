import type { ColumnType } from 'kysely';

/** migrations/20261122000300_oauth.ts */
export interface OAuthRecordTable {
  model: string;
  id_hash: string;
  payload: ColumnType<Record<string, unknown>, string, string>;
  grant_id: string | null;
  uid_hash: string | null;
  user_code_hash: string | null;
  expires_at: ColumnType<Date | null, Date | null, Date | null>;
  consumed_at: ColumnType<Date | null, Date | null, Date | null>;
  created_at: ColumnType<Date, never, never>;
}

export interface OAuthTables {
  oauth_records: OAuthRecordTable;
}
