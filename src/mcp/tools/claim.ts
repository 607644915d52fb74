import { z } from 'zod';
import { DEFAULT_LEASE_MS } from '../../domain/todo/decide.ts';
import { todoOut } from '../present.ts';
import { ok } from '../result.ts';
import { leaseMs, leaseSeconds, todoId } from './schemas.ts';
import { callerOf } from './scope.ts';
import { defineTool } from './types.ts';

export const claim = defineTool({
  name: 'claim',
  title: 'Claim a todo',
  description:
    'Claims one pending todo by id and returns a lease (lease_id, expires_at). Keep it alive with heartbeat; finish with complete or fail, or give it back with release. Fails with conflict when another lease holds it, invalid_state when it has ended, not_found otherwise.',
  input: z.object({ todo_id: todoId, lease_seconds: leaseSeconds }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(ctx, args) {
    const moved = await ctx.services.drain.claim(callerOf(ctx.endpoint), {
      todoId: args.todo_id,
      sessionId: ctx.sessionId,
      leaseMs: leaseMs(args.lease_seconds, DEFAULT_LEASE_MS),
    });
    return ok({
      todo: todoOut(moved.todo, { showLeaseId: true }),
      lease_id: moved.todo.lease?.id ?? null,
      lease_expires_at: moved.todo.lease?.expiresAt.toISOString() ?? null,
    });
  },
});
