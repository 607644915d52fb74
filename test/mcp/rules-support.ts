import { randomBytes } from 'node:crypto';
import { buildApp } from '../../src/app.ts';
import { packageVersion } from '../../src/cli/package.ts';
import { loadConfig } from '../../src/config.ts';
import { ALL_VERBS } from '../../src/domain/endpoint/verbs.ts';
import type { DeliveryDisposedEvent } from '../../src/domain/webhook/events.ts';
import { vendEndpoint } from '../../src/endpoints/vend.ts';
import { parseData } from '../../src/eventstore/codec.ts';
import { StreamNotFoundError } from '../../src/eventstore/port.ts';

type DeliveryDisposedData = DeliveryDisposedEvent['data'];

import { createRuntime, type RuntimeOptions } from '../../src/runtime.ts';
import { freePort } from '../auth/server.ts';
import { embeddedTarget } from '../support/embedded.ts';
import { settled, type TestServer, type VendedEndpoint } from './support.ts';

/** The app on a real port over an embedded-mode runtime built with the given runtime options. */
export async function startRulesServer(options: RuntimeOptions = {}): Promise<TestServer> {
  const port = await freePort();
  const target = await embeddedTarget();
  const config = loadConfig(
    {
      ...target.env,
      HOOKLINE_HOST: '127.0.0.1',
      HOOKLINE_PORT: String(port),
      HOOKLINE_LOG_LEVEL: 'silent',
      HOOKLINE_SECRET_KEY: randomBytes(32).toString('base64url'),
    },
    packageVersion(),
  );
  const runtime = await createRuntime(config, { ...target.runtimeOptions, ...options });
  const app = await buildApp(runtime, { requestLogging: false });
  await app.listen({ host: '127.0.0.1', port });
  return {
    url: config.baseUrl,
    runtime,
    close: async () => {
      await app.close();
      await runtime.close();
      await target.drop();
    },
  };
}

let counter = 0;

/** A vended endpoint with replay targets (the SSRF check at vend is the API's; here it is skipped). */
export async function vendWithTargets(
  server: TestServer,
  replayTargets: readonly string[],
  operator = 'alice',
): Promise<VendedEndpoint> {
  const { store, clock } = server.runtime;
  const v = await vendEndpoint(
    { store, clock, checkReplayTarget: async () => {} },
    {
      operator,
      human: operator,
      name: `Replayer ${++counter} ${Math.random().toString(36).slice(2, 7)}`,
      queues: ['inbox'],
      verbs: [...ALL_VERBS],
      expiresAt: null,
      replayTargets,
    },
  );
  await settled(server);
  return {
    id: v.endpointId,
    slug: v.slug,
    token: v.token,
    url: `${server.url}/mcp/${v.slug}`,
    ingestUrl: `${server.url}/webhooks/w/${v.ingestToken}`,
    webhookId: v.webhookId,
  };
}

/** The webhook's dispositions, in order. */
export async function dispositions(server: TestServer, webhookId: string): Promise<DeliveryDisposedData[]> {
  const out: DeliveryDisposedData[] = [];
  try {
    for await (const e of server.runtime.store.readStream(`dispositions-${webhookId}`)) {
      out.push(parseData<DeliveryDisposedData>(e));
    }
  } catch (err) {
    if (!(err instanceof StreamNotFoundError)) throw err;
  }
  return out;
}

export const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
