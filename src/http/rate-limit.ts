import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import { HooklineError } from '../errors.ts';

/**
 * A rate limit (@fastify/rate-limit) of the receivers (HOOKLINE_RECEIVER_RATE_LIMIT) or of the A2A
 * surface (HOOKLINE_A2A_RATE_LIMIT): `max` requests per source address (the peer, or the
 * X-Forwarded-For of a trusted proxy) per window, counted in this process. Over it: 429
 * `too_many_requests` with `Retry-After`, before the body is read, so nothing is appended.
 * Applies to the routes registered in `scope` after this call; nothing when `max` is 0.
 */
export async function limitRequests(
  scope: FastifyInstance,
  limit: Config['receiverRateLimit'] | Config['a2aRateLimit'],
): Promise<void> {
  if (limit.max === 0) return;
  await scope.register(rateLimit, {
    global: true,
    max: limit.max,
    timeWindow: limit.windowS * 1000,
    keyGenerator: (request) => request.ip,
    addHeadersOnExceeding: {
      'x-ratelimit-limit': true,
      'x-ratelimit-remaining': true,
      'x-ratelimit-reset': true,
    },
    addHeaders: {
      'x-ratelimit-limit': true,
      'x-ratelimit-remaining': true,
      'x-ratelimit-reset': true,
      'retry-after': true,
    },
    errorResponseBuilder: (_request, context) =>
      new HooklineError(
        'too_many_requests',
        `more than ${context.max} requests from this address in ${limit.windowS} s; retry after ${context.after}`,
      ),
  });
}
