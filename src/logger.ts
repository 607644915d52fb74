import { createRequire } from 'node:module';
import pino, { type Logger } from 'pino';
import type { PrettyOptions } from 'pino-pretty';
import type { Config } from './config.ts';
import { redactUrl } from './http/redact-url.ts';

export type { Logger };

type LogConfig = Pick<Config, 'logLevel'> & Partial<Pick<Config, 'logFormat'>>;

/** A request log line in a few words: `GET /log`, `200 in 3.1 ms`. */
function requestWords(log: Record<string, unknown>): string {
  const req = log.req as { method?: string; url?: string } | undefined;
  const res = log.res as { statusCode?: number } | undefined;
  const parts: string[] = [];
  if (req?.method) parts.push(`${req.method} ${req.url ?? ''}`);
  if (res?.statusCode) parts.push(String(res.statusCode));
  if (typeof log.responseTime === 'number') parts.push(`in ${log.responseTime.toFixed(1)} ms`);
  return parts.join(' ');
}

/**
 * Lines for a person (README "Logs"): pino-pretty as an in-process synchronous stream, loaded
 * only when chosen. In process rather than as a pino transport: no worker thread (memory, a
 * second start-up), nothing lost when the process exits, and a message formatter may be a function.
 */
function prettyStream(): pino.DestinationStream {
  const pretty = createRequire(import.meta.url)('pino-pretty') as (
    o: PrettyOptions,
  ) => pino.DestinationStream;
  return pretty({
    colorize: Boolean(process.stdout.isTTY),
    sync: true,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,reqId,req,res,responseTime',
    messageFormat: (log, messageKey) => {
      const words = requestWords(log);
      const message = String(log[messageKey] ?? '');
      return words ? `${message}: ${words}` : message;
    },
  });
}

/** Pretty on a terminal, JSON lines elsewhere (a pipe, a file, a container's log), unless set. */
const wantsPretty = (config: LogConfig): boolean =>
  config.logFormat === 'pretty' || (config.logFormat === undefined && Boolean(process.stdout.isTTY));

/** One pino logger for the process; Fastify logs through it (loggerInstance). */
export function createLogger(config: LogConfig, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level: config.logLevel,
      base: undefined,
      serializers: {
        // Ingest tokens ride in URLs (/webhooks/w/<token>, ?token=): never log them.
        req: (req: { method?: string; url?: string; ip?: string; id?: string }) => ({
          id: req.id,
          method: req.method,
          url: req.url === undefined ? undefined : redactUrl(req.url),
          remoteAddress: req.ip,
        }),
      },
      // Credentials never reach a log line, whatever object they ride in on.
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers["x-hookline-token"]',
          'req.headers.cookie',
          'headers.authorization',
          'token',
          'secret',
        ],
        censor: '«redacted»',
      },
    },
    destination ?? (wantsPretty(config) ? prettyStream() : undefined),
  );
}
