import { z } from 'zod';
import { todoOut } from '../present.ts';
import { ok } from '../result.ts';
import { leaseId, todoId } from './schemas.ts';
import { callerOf } from './scope.ts';
import { defineTool } from './types.ts';

const MAX_RESULT = 16 * 1024;

export const complete = defineTool({
  name: 'complete',
  title: 'Complete a todo',
  description:
    'Marks a claimed todo done (it ends; its idempotency key is free again). Needs the lease_id of the claim. Fails with lease_expired when the lease ran out or was released, conflict when another lease holds it, invalid_state when it has already ended.',
  input: z.object({
    todo_id: todoId,
    lease_id: leaseId,
    result: z
      .unknown()
      .optional()
      .refine((r) => r === undefined || JSON.stringify(r).length <= MAX_RESULT, {
        message: `result must be at most ${MAX_RESULT} bytes of JSON`,
      })
      .describe('Anything worth recording about the outcome (JSON, at most 16 KiB).'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(ctx, args) {
    const moved = await ctx.services.drain.complete(callerOf(ctx.endpoint), {
      todoId: args.todo_id,
      leaseId: args.lease_id,
      result: args.result ?? null,
    });
    return ok({ todo: todoOut(moved.todo) });
  },
});
