import { z } from 'zod';
import { todoKeySchema, todoKindSchema, todoTitleSchema } from '../../domain/todo/input.ts';
import { createFor as handAcross } from '../../friends/create-for.ts';
import { ok } from '../result.ts';
import { defineTool } from './types.ts';

export const createFor = defineTool({
  name: 'create_for',
  title: 'Hand a todo to a friend',
  description:
    "Creates a todo on the other side of an approved friendship (see list_friends): from a friend endpoint onto the approver's queue, from the approver's endpoint onto the friend's queue, and rings that side's doorbell. Arguments as an operator push: title (one line, at most 200 characters), payload (any JSON), key (idempotent per target endpoint: a key matching a live todo returns it with created=false), kind (default `friend`). friend_id names the friendship (from list_friends, on the approver's side); a friend endpoint, which sits on exactly one, may leave it out. Fails with not_found for an edge that is not approved or not this endpoint's.",
  input: z.object({
    friend_id: z.string().max(64).optional().describe('The friendship (fr_…) from list_friends.'),
    title: todoTitleSchema,
    payload: z.unknown().optional(),
    key: todoKeySchema.optional(),
    kind: todoKindSchema.default('friend'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(ctx, args) {
    const { runtime, recorder, followUps } = ctx.services;
    const pushed = await handAcross(
      { store: runtime.store, clock: runtime.clock, recorder, followUps },
      {
        caller: ctx.endpoint,
        friendId: args.friend_id,
        title: args.title,
        kind: args.kind,
        payload: args.payload ?? null,
        key: args.key ?? null,
      },
    );
    return ok({
      todo: {
        id: pushed.id,
        slug: pushed.slug,
        queue: pushed.queue,
        state: pushed.state,
        created: pushed.created,
        event_id: pushed.eventId,
      },
    });
  },
});
