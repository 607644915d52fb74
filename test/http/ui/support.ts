import type { FastifyInstance } from 'fastify';
import { type BuildAppOptions, buildApp } from '../../../src/app.ts';
import { loadConfig } from '../../../src/config.ts';
import { createLogger } from '../../../src/logger.ts';
import { createRuntime, type Runtime } from '../../../src/runtime.ts';
import { embeddedTarget } from '../../support/embedded.ts';
import { codehostSignature } from '../../support/senders.ts';

export const CODEHOST_SECRET = 'ui-test-codehost-secret';

export interface TestServer {
  readonly url: string;
  readonly app: FastifyInstance;
  readonly runtime: Runtime;
  close(): Promise<void>;
}

/**
 * A real server on a free loopback port: PostgreSQL at `databaseUrl`, else embedded mode (the run's managed PostgreSQL).
 * The codehost receiver is configured, so tests deliver signed webhooks over HTTP.
 */
export async function startTestServer(
  options: { databaseUrl?: string; env?: Record<string, string>; app?: BuildAppOptions } = {},
) {
  const target = options.databaseUrl ? undefined : await embeddedTarget();
  const config = loadConfig({
    HOOKLINE_HOST: '127.0.0.1',
    HOOKLINE_PORT: '0',
    HOOKLINE_LOG_LEVEL: 'silent',
    HOOKLINE_CODEHOST_SECRET: CODEHOST_SECRET,
    ...target?.env,
    ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
    ...options.env,
  });
  const logger = createLogger({
    logLevel: (process.env.HOOKLINE_TEST_LOG as 'debug' | undefined) ?? 'silent',
  });
  const runtime = await createRuntime(config, { ...target?.runtimeOptions, logger });
  const app = await buildApp(runtime, { requestLogging: false, ...options.app });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    runtime,
    close: async () => {
      await app.close();
      await runtime.close();
      await target?.drop();
    },
  } satisfies TestServer;
}

/** Delivers one signed codehost webhook; resolves with the IngestAck. */
export async function sendCodehost(
  url: string,
  body: unknown,
  options: { event?: string; headers?: Record<string, string> } = {},
): Promise<{ id: number; received_at: string }> {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const signature = await codehostSignature(CODEHOST_SECRET, raw);
  const res = await fetch(`${url}/webhooks/codehost`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': signature,
      'x-codehost-event': options.event ?? 'push',
      ...options.headers,
    },
    body: raw,
  });
  if (res.status !== 202) throw new Error(`codehost delivery answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { id: number; received_at: string };
}

/** Posts a form as the browser would from our own page. */
export async function postForm(
  url: string,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'sec-fetch-site': 'same-origin',
      ...headers,
    },
    body: new URLSearchParams(fields).toString(),
  });
}

export async function until<T>(
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
