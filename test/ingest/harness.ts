import { createHmac } from 'node:crypto';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import type { Clock } from '../../src/clock.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import { DELIVERIES_STREAM } from '../../src/domain/delivery/events.ts';
import { StreamNotFoundError } from '../../src/eventstore/port.ts';
import { createLogger } from '../../src/logger.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { embeddedTarget } from '../support/embedded.ts';
import { codehostSignature } from '../support/senders.ts';

export const SECRETS = {
  codehost: 'codehost-secret',
  payments: 'whsec_payments',
  chat: 'chat-secret',
} as const;

export interface Hookline {
  readonly config: Config;
  readonly runtime: Runtime;
  readonly app: FastifyInstance;
  /** Every log line written so far (JSON text). */
  readonly logs: string[];
  /** Revision count of `deliveries` (0 when none). */
  deliveries(): Promise<number>;
  /** Waits until every projection has applied everything appended so far. */
  settle(): Promise<void>;
  close(): Promise<void>;
}

/** hookline in embedded mode (the run's managed PostgreSQL) or on `DATABASE_URL` in env, built with the real buildApp. */
export async function startHookline(
  env: Record<string, string> = {},
  options: { clock?: Clock } = {},
): Promise<Hookline> {
  const target = env.DATABASE_URL ? undefined : await embeddedTarget();
  const config = loadConfig({
    ...target?.env,
    HOOKLINE_CODEHOST_SECRET: SECRETS.codehost,
    HOOKLINE_PAYMENTS_SECRET: SECRETS.payments,
    HOOKLINE_CHAT_SECRET: SECRETS.chat,
    HOOKLINE_LOG_LEVEL: 'info',
    ...env,
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const runtime = await createRuntime(config, {
    ...target?.runtimeOptions,
    logger: createLogger(config, sink),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const app = await buildApp(runtime);
  await app.ready();
  return {
    config,
    runtime,
    app,
    logs,
    deliveries: async () => {
      const info = await runtime.store.streamInfo(DELIVERIES_STREAM).catch((e) => {
        if (e instanceof StreamNotFoundError) return { revision: -1n };
        throw e;
      });
      return Number(info.revision + 1n);
    },
    settle: async () => {
      await runtime.projections.waitFor(await runtime.store.committedPosition(), { timeoutMs: 20_000 });
    },
    close: async () => {
      await app.close();
      await runtime.close();
      await target?.drop();
    },
  };
}

export const hex = (secret: string, ...parts: (string | Uint8Array)[]) => {
  const mac = createHmac('sha256', secret);
  for (const p of parts) mac.update(p);
  return mac.digest('hex');
};

/** Headers of a signed codehost delivery, signed as GitHub's code signs (test/support/senders.ts). */
export const codehostHeaders = async (body: string | Uint8Array, extra: Record<string, string> = {}) => ({
  'content-type': 'application/json',
  'x-hub-signature-256': await codehostSignature(SECRETS.codehost, body),
  'x-github-event': 'push',
  ...extra,
});

export const chatHeaders = (body: string, ts = Math.floor(Date.now() / 1000)) => ({
  'content-type': 'application/json',
  'x-chat-request-timestamp': String(ts),
  'x-chat-signature': `v0=${hex(SECRETS.chat, `v0:${ts}:`, body)}`,
});
