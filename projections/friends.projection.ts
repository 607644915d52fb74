import type { Kysely, Updateable } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { decodeOneOf, isOneOfTypes } from '../src/domain/events.ts';
import { FRIEND_EVENT_TYPES } from '../src/domain/friend/events.ts';
import { friendIdOfSource } from '../src/domain/friend/grant.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './engine/types.ts';
import { createFriendTables, type FriendsTable } from './friends.table.ts';
import { textSafe } from './pg-safe.ts';

/** The read model `friends`: the edges, and the last todo each carried (a TodoCreated from create_for). */
export const friendsProjection: Projection = {
  name: 'friends',
  version: 1,
  tables: ['friends'],
  createTables: createFriendTables,
  handles: (e) =>
    (e.streamId.startsWith('friend-') && isOneOfTypes(FRIEND_EVENT_TYPES, e.type)) ||
    (e.streamId.startsWith('todo-') && e.type === 'TodoCreated'),
  async apply(db, events) {
    for (const e of events) await applyFriendEvent(db, e);
  },
};

async function applyFriendEvent(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  if (e.type === 'TodoCreated') {
    const todo = decodeOneOf(e, ['TodoCreated']);
    const friendId = friendIdOfSource(todo.data.source);
    if (friendId === null) return;
    await db
      .updateTable('friends')
      .set({ last_activity_at: new Date(todo.data.created_at) })
      .where('id', '=', friendId)
      .execute();
    return;
  }
  const event = decodeOneOf(e, FRIEND_EVENT_TYPES);
  const id = event.data.friend_id;
  const update = (values: Updateable<FriendsTable>) =>
    db.updateTable('friends').set(values).where('id', '=', id).execute();
  switch (event.type) {
    case 'FriendRequested': {
      const d = event.data;
      await db
        .insertInto('friends')
        .values({
          id,
          status: 'pending',
          approver_endpoint_id: d.approver_endpoint_id,
          approver_slug: d.approver_slug,
          approver_operator: d.approver_operator,
          requester_name: d.requester.name,
          requester_description: textSafe(d.requester.description),
          requester_card_url: d.requester.card_url,
          requester_endpoint_id: d.requester.endpoint_id,
          requester_operator: d.requester.operator,
          requested_verbs: JSON.stringify(d.requested_verbs),
          granted_verbs: null,
          queue: d.queue,
          message: textSafe(d.message),
          via: d.via,
          friend_endpoint_id: null,
          friend_slug: null,
          approver_queue: null,
          credential_collected: false,
          requested_at: new Date(d.requested_at),
          expires_at: new Date(d.expires_at),
          approved_at: null,
          ended_at: null,
          ended_by: null,
          last_activity_at: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      return;
    }
    case 'FriendApproved': {
      const d = event.data;
      await update({
        status: 'approved',
        granted_verbs: JSON.stringify(d.granted_verbs),
        friend_endpoint_id: d.friend_endpoint_id,
        friend_slug: d.friend_slug,
        approver_queue: d.approver_queue,
        approved_at: new Date(d.approved_at),
      });
      return;
    }
    case 'FriendNarrowed':
      await update({ granted_verbs: JSON.stringify(event.data.granted_verbs) });
      return;
    case 'FriendCredentialCollected':
      await update({ credential_collected: true });
      return;
    case 'FriendDeclined':
      await update({
        status: 'declined',
        ended_at: new Date(event.data.declined_at),
        ended_by: event.data.declined_by,
      });
      return;
    case 'FriendRevoked':
      await update({
        status: 'revoked',
        ended_at: new Date(event.data.revoked_at),
        ended_by: event.data.revoked_by,
      });
      return;
    case 'FriendWithdrawn':
      await update({
        status: 'withdrawn',
        ended_at: new Date(event.data.withdrawn_at),
        ended_by: event.data.withdrawn_by,
      });
      return;
    case 'FriendExpired':
      await update({ status: 'expired', ended_at: new Date(event.data.expired_at), ended_by: null });
      return;
    default: {
      const never: never = event;
      return never;
    }
  }
}
