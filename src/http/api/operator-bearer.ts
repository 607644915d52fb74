import type { FastifyReply, FastifyRequest } from 'fastify';
import type { OperatorAuth, OperatorPrincipal } from '../../auth/index.ts';
import { HooklineError } from '../../errors.ts';

/** What an operator API scope needs to check its bearer and read the caller afterwards. */
export interface OperatorBearer {
  /**
   * The scope's `onRequest` hook: verifies the operator access token before the body is read, so a
   * bad bearer is 401 whatever the body, with RFC 6750 §3's challenge naming the realm and, when a
   * token was sent, that the token is the problem.
   */
  readonly verify: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /** The principal `verify` found for this request. */
  readonly principal: (request: FastifyRequest) => OperatorPrincipal;
}

export function operatorBearer(auth: Pick<OperatorAuth, 'verifyBearer'>): OperatorBearer {
  const principals = new WeakMap<FastifyRequest, OperatorPrincipal>();
  return {
    async verify(request, reply) {
      try {
        principals.set(request, await auth.verifyBearer(request.headers.authorization));
      } catch (err) {
        reply.header(
          'www-authenticate',
          request.headers.authorization
            ? 'Bearer realm="hookline", error="invalid_token"'
            : 'Bearer realm="hookline"',
        );
        throw err;
      }
    },
    principal(request) {
      const p = principals.get(request);
      if (!p) throw new HooklineError('unauthorized', 'an operator bearer token is required');
      return p;
    },
  };
}
