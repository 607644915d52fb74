import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import { createRuntime, type Runtime, type RuntimeOptions } from './runtime.ts';

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly runtime: Runtime;
  /** The address actually bound (the port may have been 0). */
  readonly url: string;
  /** Graceful stop: no new connections, in-flight requests and appends drained, then closed. */
  stop(): Promise<void>;
}

export interface StartServerOptions {
  /** Install SIGTERM/SIGINT handlers that stop gracefully and exit (the CLI does; tests do not). */
  readonly handleSignals?: boolean;
  /** Passed to createRuntime (tests). */
  readonly runtime?: RuntimeOptions;
}

/** Opens the runtime, builds the app and listens (style.md §4: server.ts listens). */
export async function startServer(config: Config, options: StartServerOptions = {}): Promise<RunningServer> {
  const runtime: Runtime = await createRuntime(config, options.runtime);
  const app = await buildApp(runtime);
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    await runtime.close();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      // Fastify stops accepting and waits for in-flight requests (each of which awaits its own
      // append) before onClose hooks run; connections with nothing in flight are closed at once, the
      // others when their response is done (http/connections.ts).
      await app.close();
      await runtime.close();
    })();
    return stopping;
  };

  if (options.handleSignals) {
    const onSignal = (signal: NodeJS.Signals) => {
      runtime.logger.info({ signal }, 'shutting down');
      const timer = setTimeout(() => {
        runtime.logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timed out; exiting');
        process.exit(1);
      }, config.shutdownTimeoutMs);
      timer.unref();
      stop().then(
        () => process.exit(0),
        (err: unknown) => {
          runtime.logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }

  runtime.logger.info({ url: `http://${host}:${port}`, mode: config.mode }, 'hookline listening');
  return { app, runtime, url: `http://${host}:${port}`, stop };
}
