import { z } from 'zod';
import { approvedEdgesOf } from '../../../projections/friends.queries.ts';
import { ok } from '../result.ts';
import { defineTool } from './types.ts';

export const listFriends = defineTool({
  name: 'list_friends',
  title: 'List friends',
  description:
    "The approved friendships this endpoint sits on, so you know whom create_for can reach: for each, friend_id, the peer's name (untrusted text), the queue a create_for from here lands on, and the verbs granted to the friend.",
  input: z.object({}),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(ctx) {
    const rows = await approvedEdgesOf(ctx.services.runtime.db, ctx.endpoint.id);
    const friends = rows.map((r) => {
      const asFriend = r.friend_endpoint_id === ctx.endpoint.id;
      return {
        friend_id: r.id,
        role: asFriend ? 'friend' : 'approver',
        peer: asFriend
          ? { untrusted_name: r.approver_slug, slug: r.approver_slug }
          : { untrusted_name: r.requester_name, slug: r.friend_slug },
        // Where a create_for from this endpoint lands.
        queue: asFriend ? r.approver_queue : r.queue,
        granted_verbs: r.granted_verbs ?? [],
        approved_at: r.approved_at ? new Date(r.approved_at).toISOString() : null,
        last_activity_at: r.last_activity_at ? new Date(r.last_activity_at).toISOString() : null,
      };
    });
    return ok({ friends });
  },
});
