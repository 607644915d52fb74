import { z } from 'zod';
import { todoOut } from '../present.ts';
import { ok } from '../result.ts';
import { todoId } from './schemas.ts';
import { callerOf } from './scope.ts';
import { defineTool } from './types.ts';

export const getTodo = defineTool({
  name: 'get_todo',
  title: 'Get a todo',
  description:
    "One todo of this endpoint, read from its own stream (always current): state, attempts, lease expiry, and its title and payload inside `untrusted`. Fails with not_found for an unknown id or another endpoint's todo.",
  input: z.object({ todo_id: todoId }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(ctx, args) {
    const todo = await ctx.services.drain.get(callerOf(ctx.endpoint), args.todo_id);
    return ok({ todo: todoOut(todo) });
  },
});
