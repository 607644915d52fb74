import pino, { type Logger } from 'pino';
import type { Config } from './config.ts';
import { redactUrl } from './http/redact-url.ts';

export type { Logger };

/** One pino logger for the process; Fastify logs through it (loggerInstance). */
export function createLogger(config: Pick<Config, 'logLevel'>, destination?: pino.DestinationStream): Logger {
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
    destination,
  );
}
