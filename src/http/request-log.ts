import { LogController } from 'fastify';

/** Static files (`/static/...`): several per page, rarely of interest. */
const isStatic = (url: string | undefined): boolean => url?.startsWith('/static/') === true;

/**
 * Fastify's request log lines, made to read (README "Logs"): one `info` line per request when it
 * completes, with its method, URL, status and time; the `incoming request` line at `debug`; and
 * requests for static files entirely at `debug`, so a page load logs the page, not its stylesheet,
 * scripts and icon. Failed requests stay at `error`.
 */
export class RequestLogController extends LogController {
  override incomingRequest(...args: Parameters<LogController['incomingRequest']>): void {
    const [request] = args;
    if (!this.isLogDisabled(request)) request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(...args: Parameters<LogController['requestCompleted']>): void {
    const [error, request, reply] = args;
    if (error) {
      super.requestCompleted(...args);
      return;
    }
    if (this.isLogDisabled(request)) return;
    const line = { req: request, res: reply, responseTime: reply.elapsedTime };
    if (isStatic(request.raw.url)) reply.log.debug(line, 'request completed');
    else reply.log.info(line, 'request completed');
  }
}
