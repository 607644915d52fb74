import { type Kysely, sql } from 'kysely';

/**
 * Storage of the operators' authorization server (oidc-provider's adapter): sessions,
 * interactions, grants, authorization codes, access and refresh tokens. Not domain state, so not
 * in the event log. Every id is kept as its SHA-256: a copy of this table yields no usable token.
 * `grant_id` serves revocation of a whole grant (a reused refresh token); `expires_at` serves
 * lookups and the sweep of expired rows.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time and never see app types
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('oauth_records')
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('id_hash', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('grant_id', 'text')
    .addColumn('uid_hash', 'text')
    .addColumn('user_code_hash', 'text')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('consumed_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('oauth_records_pkey', ['model', 'id_hash'])
    .execute();
  await db.schema.createIndex('oauth_records_grant_idx').on('oauth_records').column('grant_id').execute();
  await db.schema
    .createIndex('oauth_records_uid_idx')
    .on('oauth_records')
    .columns(['model', 'uid_hash'])
    .execute();
  await db.schema.createIndex('oauth_records_expires_idx').on('oauth_records').column('expires_at').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: as above
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('oauth_records').execute();
}
