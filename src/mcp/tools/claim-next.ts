import { z } from 'zod';
import { DEFAULT_LEASE_MS } from '../../domain/todo/decide.ts';
import { todoOut } from '../present.ts';
import { ok } from '../result.ts';
import { leaseMs, leaseSeconds, queueName } from './schemas.ts';
import { callerOf, queuesFor } from './scope.ts';
import { defineTool } from './types.ts';

export const claimNext = defineTool({
  name: 'claim_next',
  title: 'Claim the next todo',
  description:
    'Atomically claims the oldest pending todo of a queue (default: every queue of the endpoint) and returns it with its lease; `todo` is null when nothing is pending. Racing agents never get the same todo.',
  input: z.object({
    queue: queueName.optional().describe('The queue to take from (default: every queue of the endpoint).'),
    lease_seconds: leaseSeconds,
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(ctx, args) {
    const moved = await ctx.services.drain.claimNext(callerOf(ctx.endpoint), {
      queues: queuesFor(ctx.endpoint, args.queue),
      sessionId: ctx.sessionId,
      leaseMs: leaseMs(args.lease_seconds, DEFAULT_LEASE_MS),
      ...(ctx.firstPage ? { firstPage: ctx.firstPage } : {}),
    });
    if (!moved) return ok({ todo: null, lease_id: null, lease_expires_at: null });
    return ok({
      todo: todoOut(moved.todo, { showLeaseId: true }),
      lease_id: moved.todo.lease?.id ?? null,
      lease_expires_at: moved.todo.lease?.expiresAt.toISOString() ?? null,
    });
  },
});
