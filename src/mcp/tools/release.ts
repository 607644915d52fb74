import { z } from 'zod';
import { todoOut } from '../present.ts';
import { ok } from '../result.ts';
import { leaseId, todoId } from './schemas.ts';
import { callerOf } from './scope.ts';
import { defineTool } from './types.ts';

export const release = defineTool({
  name: 'release',
  title: 'Release a todo',
  description:
    'Gives a claimed todo back unfinished: it is pending again (no attempt counted) and the queue rings for the other agents. Same lease checks as complete.',
  input: z.object({
    todo_id: todoId,
    lease_id: leaseId,
    reason: z.string().min(1).max(2000).optional().describe('Why (shown to the operator).'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(ctx, args) {
    const moved = await ctx.services.drain.release(callerOf(ctx.endpoint), {
      todoId: args.todo_id,
      leaseId: args.lease_id,
      reason: args.reason ?? null,
    });
    return ok({ todo: todoOut(moved.todo) });
  },
});
