import { z } from 'zod';
import { approvedEdgesOf } from '../../../projections/friends.queries.ts';
import { ok } from '../result.ts';
import { defineTool } from './types.ts';

/**
 * The approver's side only: list_friends is not a verb a friend can be granted (create_for plus
 * the drain verbs, spec release 0.5.0 item 2), so a friend endpoint never holds it, and it needs
 * it not: its create_for goes to the one approver it was minted for, without a friend_id.
 */
export const listFriends = defineTool({
  name: 'list_friends',
  title: 'List friends',
  description:
    "The approved friendships of this endpoint (requests to it that its owner approved), so you know whom create_for can reach: for each, friend_id, the friend's name (untrusted text) and the slug of its friend endpoint, the queue a create_for from here lands on, and the verbs granted to the friend.",
  input: z.object({}),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(ctx) {
    const rows = await approvedEdgesOf(ctx.services.runtime.db, ctx.endpoint.id);
    const friends = rows.map((r) => ({
      friend_id: r.id,
      peer: { untrusted_name: r.requester_name, slug: r.friend_slug },
      // The friend endpoint's queue (the requester's): where a create_for from this endpoint lands.
      queue: r.queue,
      granted_verbs: r.granted_verbs ?? [],
      approved_at: r.approved_at ? new Date(r.approved_at).toISOString() : null,
      last_activity_at: r.last_activity_at ? new Date(r.last_activity_at).toISOString() : null,
    }));
    return ok({ friends });
  },
});
