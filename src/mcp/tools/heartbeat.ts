import { z } from 'zod';
import { DEFAULT_LEASE_MS } from '../../domain/todo/decide.ts';
import { todoOut } from '../present.ts';
import { ok } from '../result.ts';
import { leaseId, leaseMs, leaseSeconds, todoId } from './schemas.ts';
import { callerOf } from './scope.ts';
import { defineTool } from './types.ts';

export const heartbeat = defineTool({
  name: 'heartbeat',
  title: 'Extend a lease',
  description:
    'Extends the lease of a claimed todo to lease_seconds from now. Call it well before expires_at; a lease that has run out cannot be extended (lease_expired): claim the todo again.',
  input: z.object({ todo_id: todoId, lease_id: leaseId, lease_seconds: leaseSeconds }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(ctx, args) {
    const moved = await ctx.services.drain.heartbeat(callerOf(ctx.endpoint), {
      todoId: args.todo_id,
      leaseId: args.lease_id,
      leaseMs: leaseMs(args.lease_seconds, DEFAULT_LEASE_MS),
    });
    return ok({
      todo: todoOut(moved.todo, { showLeaseId: true }),
      lease_expires_at: moved.todo.lease?.expiresAt.toISOString() ?? null,
    });
  },
});
