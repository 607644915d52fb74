import type { Socket } from 'node:net';
import type { ConnectionError, FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ZodError } from 'zod';
import { asHooklineError, HooklineError, type ProblemDocument } from '../errors.ts';
import { EventTooLargeError, StoreUnavailableError, WrongExpectedVersionError } from '../eventstore/port.ts';
import { redactUrl } from './redact-url.ts';

// Not `import { STATUS_CODES } from 'node:http'`: an ES import of node:http builds its namespace from
// every export, and reading the lazy ones (WebSocket and friends) loads Node's bundled undici, about
// 60 ms of CPU at every start (bench/README.md, "Start-up time"). test/http/builtin-imports.unit.test.ts.
const { STATUS_CODES } = process.getBuiltinModule('node:http');

/**
 * The one error handler: every error of every route becomes an RFC 9457 problem document.
 * The operator API declares its error bodies as application/json (spec section 7); everything
 * else is application/problem+json. A 5xx never shows internals.
 */
export function toHooklineError(error: unknown): HooklineError {
  const known = asHooklineError(error);
  if (known) return known;
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
    // Fastify's messages for these two quote the raw path, which may hold a token.
    case 'FST_ERR_BAD_URL':
      return new HooklineError('bad_request', 'the request URL is malformed (an invalid percent-escape)');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new HooklineError('uri_too_long', 'a segment of the request path is too long');
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

/** A zod failure in words for a problem `detail`: `field: what was expected`, never zod's ✖/→ layout. */
export function summarizeZod(error: ZodError): string {
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

/** Renders a problem as an HTML page of the screens; set by the UI plugin (README "Screens"). */
export type ProblemPageRenderer = (problem: ProblemDocument) => {
  html: string;
  headers: Record<string, string>;
};

declare module 'fastify' {
  interface FastifyInstance {
    /** Shared by every scope: the UI plugin puts its renderer here. */
    readonly problemPages: { render: ProblemPageRenderer | undefined };
  }
}

/** Surfaces whose clients are programs: they keep problem documents whatever they accept. */
const PROGRAM_PATHS = /^\/(api|mcp|webhooks|oauth|\.well-known|admin|events|healthz|static)(\/|\?|$)/;

/**
 * A person's browser navigating to a screen (Accept: text/html, not an htmx request) gets the
 * problem as a page in the UI's layout; scripts, htmx and the API keep the problem document.
 */
function wantsPage(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  if (request.headers['hx-request'] === 'true') return false;
  if (!/\btext\/html\b/i.test(request.headers.accept ?? '')) return false;
  return !PROGRAM_PATHS.test(request.url);
}

export function sendProblem(
  reply: FastifyReply,
  error: HooklineError,
  request: FastifyRequest,
): FastifyReply {
  // The instance never echoes a token back (`/webhooks/generic/<name>/<token>`).
  const problem: ProblemDocument = error.toProblem(redactUrl(request.url.split('?')[0] ?? '/'));
  const render = request.server.problemPages?.render;
  if (render && wantsPage(request)) {
    const page = render(problem);
    return reply
      .code(error.status)
      .headers(page.headers)
      .header('cache-control', 'no-store')
      .type('text/html; charset=utf-8')
      .send(page.html);
  }
  if (error.status === 401 && request.url.startsWith('/api/') && !reply.hasHeader('www-authenticate')) {
    reply.header('www-authenticate', 'Bearer');
  }
  return reply.code(error.status).type(problemContentType(request.url)).send(problem);
}

/**
 * 5xx answers about someone else's server (a replay target that did not answer): the operator's
 * request was served as well as it could be, so a warning with the reason, not an error with a stack.
 */
const UPSTREAM: ReadonlySet<string> = new Set(['replay_failed']);

/** Logs `error` and answers it as a problem document; the error handler and frameworkErrors share it. */
export function replyWithProblem(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const he = toHooklineError(error);
  if (UPSTREAM.has(he.code))
    request.log.warn({ code: he.code, status: he.status, detail: he.message }, 'upstream failed');
  else if (he.status >= 500) request.log.error({ err: error }, 'request failed');
  else request.log.info({ code: he.code, status: he.status }, 'request refused');
  return sendProblem(reply, he, request);
}

/**
 * Fastify's `frameworkErrors`: errors it raises before any route or hook of ours runs (a malformed
 * percent-escape in a path parameter, an over-long parameter) get the same problem document.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  replyWithProblem(error, request, reply);
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses has no request or reply
 * object, so the problem document is written to the socket directly, as Fastify's default does
 * with its own JSON.
 */
export function clientErrorProblem(
  this: { log: FastifyBaseLogger },
  error: ConnectionError,
  socket: Socket,
): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const he =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new HooklineError('request_timeout', 'the request was not received in time')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new HooklineError('headers_too_large', 'the request headers exceed the allowed size')
        : new HooklineError('bad_request', 'the request is not valid HTTP/1.1');
  this.log.trace({ err: error }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify(he.toProblem());
    socket.write(
      `HTTP/1.1 ${he.status} ${STATUS_CODES[he.status]}\r\nContent-Type: application/problem+json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

export const errorsPlugin = fp(
  async (app) => {
    app.decorate('problemPages', { render: undefined });
    app.setErrorHandler(replyWithProblem);
    // From the start of close(), a request that still reaches us (pipelined, or on a kept-alive
    // connection) is refused with a 503 problem and `Connection: close`; requests in flight passed
    // this hook before and drain as before. Register this plugin before any route.
    let closing = false;
    app.addHook('preClose', async () => {
      closing = true;
    });
    // A callback hook, not an async one: it runs for every request, and an async hook costs a
    // promise and a microtask each time. Replying without calling done() ends the request here.
    app.addHook('onRequest', (request, reply, done) => {
      if (!closing) {
        done();
        return;
      }
      request.log.info('refused: shutting down');
      reply.header('connection', 'close');
      const refusal = new HooklineError('unavailable', 'the server is shutting down; retry shortly');
      sendProblem(reply, refusal, request);
    });
    app.setNotFoundHandler((request, reply) =>
      sendProblem(
        reply,
        // Redacted as in the request log: `/webhooks/generic/<name>/<token>/more` has no route.
        new HooklineError(
          'not_found',
          `no route for ${request.method} ${redactUrl(request.url.split('?')[0] ?? '/')}`,
        ),
        request,
      ),
    );
  },
  { name: 'hookline-errors' },
);
