import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import type { FriendRow } from './friends.table.ts';

/**
 * The edges an operator may see: those whose approver endpoint they own (incoming) and those a
 * local endpoint of theirs asked for (outgoing). Another operator's edges never appear.
 */
export function listFriendsOf(db: Kysely<Database>, operator: string): Promise<FriendRow[]> {
  return db
    .selectFrom('friends')
    .selectAll()
    .where((eb) => eb.or([eb('approver_operator', '=', operator), eb('requester_operator', '=', operator)]))
    .orderBy('requested_at', 'desc')
    .orderBy('id')
    .execute();
}

/** One edge, if the operator may see it. */
export function findFriendOf(
  db: Kysely<Database>,
  operator: string,
  id: string,
): Promise<FriendRow | undefined> {
  return db
    .selectFrom('friends')
    .selectAll()
    .where('id', '=', id)
    .where((eb) => eb.or([eb('approver_operator', '=', operator), eb('requester_operator', '=', operator)]))
    .executeTakeFirst();
}

/**
 * list_friends: the approved edges of an approver endpoint. A friend endpoint never holds that
 * verb (it is not grantable), so the friend's side is never asked for.
 */
export function approvedEdgesOf(db: Kysely<Database>, endpointId: string): Promise<FriendRow[]> {
  return db
    .selectFrom('friends')
    .selectAll()
    .where('status', '=', 'approved')
    .where('approver_endpoint_id', '=', endpointId)
    .orderBy('approved_at')
    .orderBy('id')
    .execute();
}

/**
 * The expiry sweep: pending requests whose expiry has passed by `now`, oldest expiry first. The
 * read model may lag; the sweep decides on each edge's stream, so a row approved meanwhile is left.
 */
export async function dueFriendRequests(db: Kysely<Database>, now: Date, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('friends')
    .select('id')
    .where('status', '=', 'pending')
    .where('expires_at', '<=', now)
    .orderBy('expires_at')
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}
