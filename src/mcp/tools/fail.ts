import { z } from 'zod';
import { todoOut } from '../present.ts';
import { ok } from '../result.ts';
import { leaseId, todoId } from './schemas.ts';
import { callerOf } from './scope.ts';
import { defineTool } from './types.ts';

export const fail = defineTool({
  name: 'fail',
  title: 'Fail a todo',
  description:
    'Reports a failed attempt on a claimed todo. retryable=true puts it back to pending (attempts counted) until the maximum number of attempts, after which it fails for good; retryable=false fails it for good now. Same lease checks as complete.',
  input: z.object({
    todo_id: todoId,
    lease_id: leaseId,
    reason: z.string().min(1).max(2000).describe('Why it failed (shown to the operator).'),
    retryable: z.boolean().optional().describe('May another attempt succeed? Default false.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(ctx, args) {
    const moved = await ctx.services.drain.fail(callerOf(ctx.endpoint), {
      todoId: args.todo_id,
      leaseId: args.lease_id,
      reason: args.reason,
      retryable: args.retryable ?? false,
    });
    return ok({ todo: todoOut(moved.todo), max_attempts: ctx.services.drain.maxAttempts });
  },
});
