import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ZodError } from 'zod';
import { HooklineError, type ProblemDocument } from '../errors.ts';
import { EventTooLargeError, StoreUnavailableError, WrongExpectedVersionError } from '../eventstore/port.ts';
import { redactUrl } from './redact-url.ts';

/**
 * The one error handler: every error of every route becomes an RFC 9457 problem document.
 * The operator API declares its error bodies as application/json (spec section 7); everything
 * else is application/problem+json. A 5xx never shows internals.
 */
export function toHooklineError(error: unknown): HooklineError {
  if (error instanceof HooklineError) return error;
  if (error instanceof ZodError) {
    return new HooklineError('invalid_body', summarizeZod(error), {
      errors: error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
    });
  }
  if (error instanceof WrongExpectedVersionError) {
    return new HooklineError('conflict', 'the resource changed concurrently; retry the request');
  }
  if (error instanceof EventTooLargeError) {
    return new HooklineError('payload_too_large', 'the payload is larger than the event store accepts');
  }
  if (error instanceof StoreUnavailableError) {
    return new HooklineError(
      'storage_unavailable',
      'the event log is unavailable; nothing was recorded, retry later',
    );
  }
  const fe = error as Partial<FastifyError>;
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HooklineError('payload_too_large', 'the request body exceeds the configured maximum size');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new HooklineError('unsupported_media_type', fe.message);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new HooklineError('invalid_body', fe.message);
    case 'FST_ERR_VALIDATION':
      return new HooklineError('invalid_body', fe.message);
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    if (fe.statusCode === 404) return new HooklineError('not_found', fe.message);
    if (fe.statusCode === 413) return new HooklineError('payload_too_large', fe.message);
    if (fe.statusCode === 415) return new HooklineError('unsupported_media_type', fe.message);
    return new HooklineError('bad_request', fe.message);
  }
  return new HooklineError('internal', undefined, {}, { cause: error });
}

function summarizeZod(error: ZodError): string {
  const first = error.issues[0];
  if (!first) return 'invalid request body';
  const where = first.path.length > 0 ? `${first.path.join('.')}: ` : '';
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more)` : '';
  return `${where}${first.message}${more}`;
}

export function problemContentType(url: string): string {
  return url.startsWith('/api/')
    ? 'application/json; charset=utf-8'
    : 'application/problem+json; charset=utf-8';
}

export function sendProblem(
  reply: FastifyReply,
  error: HooklineError,
  request: FastifyRequest,
): FastifyReply {
  // The instance never echoes a token back (`/webhooks/generic/<name>/<token>`).
  const problem: ProblemDocument = error.toProblem(redactUrl(request.url.split('?')[0] ?? '/'));
  if (error.status === 401 && request.url.startsWith('/api/') && !reply.hasHeader('www-authenticate')) {
    reply.header('www-authenticate', 'Bearer');
  }
  return reply.code(error.status).type(problemContentType(request.url)).send(problem);
}

export const errorsPlugin = fp(
  async (app) => {
    app.setErrorHandler((error, request, reply) => {
      const he = toHooklineError(error);
      if (he.status >= 500) request.log.error({ err: error }, 'request failed');
      else request.log.info({ code: he.code, status: he.status }, 'request refused');
      return sendProblem(reply, he, request);
    });
    app.setNotFoundHandler((request, reply) =>
      sendProblem(
        reply,
        new HooklineError('not_found', `no route for ${request.method} ${request.url.split('?')[0]}`),
        request,
      ),
    );
  },
  { name: 'hookline-errors' },
);
