import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Adapter, AdapterFactory, AdapterPayload } from 'oidc-provider';
import type { Database } from '../db/database.ts';

const hash = (value: string): string => createHash('sha256').update(value, 'utf8').digest('base64url');

/**
 * oidc-provider's storage over our PostgreSQL database. Ids, uids and user codes
 * are looked up by their SHA-256, and the payload is stored without its `jti` (for opaque tokens
 * the token itself), so the table never holds a usable credential. `consume` marks the row;
 * oidc-provider sees `consumed` and treats a second use of a code or a rotated refresh token as
 * reuse, revoking the whole grant through `revokeByGrantId`.
 */
export function createOAuthAdapterFactory(db: Kysely<Database>): AdapterFactory {
  return (model: string): Adapter => {
    const base = () => db.selectFrom('oauth_records').where('model', '=', model);

    const live = (
      row: { payload: Record<string, unknown>; consumed_at: Date | null; expires_at: Date | null },
      id: string,
    ) => {
      if (row.expires_at && row.expires_at.getTime() <= Date.now()) return undefined;
      const payload: AdapterPayload = { ...row.payload, jti: id };
      if (row.consumed_at) payload.consumed = Math.floor(row.consumed_at.getTime() / 1000);
      return payload;
    };

    return {
      async upsert(id, payload, expiresIn) {
        const { jti: _jti, consumed: _consumed, ...rest } = payload;
        const expiresAt = typeof expiresIn === 'number' ? new Date(Date.now() + expiresIn * 1000) : null;
        const row = {
          payload: JSON.stringify(rest),
          grant_id: typeof payload.grantId === 'string' ? payload.grantId : null,
          uid_hash: typeof payload.uid === 'string' ? hash(payload.uid) : null,
          user_code_hash: typeof payload.userCode === 'string' ? hash(payload.userCode) : null,
          expires_at: expiresAt,
          consumed_at: null,
        };
        await db
          .insertInto('oauth_records')
          .values({ model, id_hash: hash(id), ...row })
          .onConflict((oc) => oc.columns(['model', 'id_hash']).doUpdateSet(row))
          .execute();
      },

      async find(id) {
        const row = await base()
          .select(['payload', 'consumed_at', 'expires_at'])
          .where('id_hash', '=', hash(id))
          .executeTakeFirst();
        return row ? live(row, id) : undefined;
      },

      async findByUid(uid) {
        const row = await base()
          .select(['payload', 'consumed_at', 'expires_at'])
          .where('uid_hash', '=', hash(uid))
          .executeTakeFirst();
        // The id is not recoverable from its hash. oidc-provider only reads a Session found by
        // uid (to compare its account), never writes it back, so it needs no id.
        return row ? live(row, '') : undefined;
      },

      async findByUserCode(userCode) {
        const row = await base()
          .select(['payload', 'consumed_at', 'expires_at'])
          .where('user_code_hash', '=', hash(userCode))
          .executeTakeFirst();
        return row ? live(row, '') : undefined;
      },

      async consume(id) {
        await db
          .updateTable('oauth_records')
          .set({ consumed_at: new Date() })
          .where('model', '=', model)
          .where('id_hash', '=', hash(id))
          .execute();
      },

      async destroy(id) {
        await db
          .deleteFrom('oauth_records')
          .where('model', '=', model)
          .where('id_hash', '=', hash(id))
          .execute();
      },

      async revokeByGrantId(grantId) {
        // Every artefact of the grant, whatever its model: codes, access and refresh tokens.
        await db
          .deleteFrom('oauth_records')
          .where('grant_id', '=', grantId)
          .where('model', '!=', 'Grant')
          .execute();
      },
    };
  };
}

/** Deletes rows that expired over an hour ago; run periodically (lookups already ignore them). */
export async function sweepExpiredOAuthRecords(db: Kysely<Database>): Promise<number> {
  const result = await db
    .deleteFrom('oauth_records')
    .where('expires_at', '<', new Date(Date.now() - 3_600_000))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
