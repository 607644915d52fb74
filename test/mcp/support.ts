import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { ALL_VERBS, type Verb } from '../../src/domain/endpoint/verbs.ts';
import { vendEndpoint } from '../../src/endpoints/vend.ts';
import { createFollowUps } from '../../src/follow-up.ts';
import { createDeliveryRecorder } from '../../src/ingest/recorder.ts';
import { pushTodo } from '../../src/todos/push.ts';
import { startServer as startTestServer, type TestServer } from '../auth/server.ts';
import { settled } from '../http/api/client.ts';

export type { TestServer } from '../auth/server.ts';

/**
 * The shared test server with a secret key of its own, so that sealing webhook secrets never
 * creates a key file in the working directory.
 */
export function startServer(options: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  return startTestServer({
    ...options,
    env: { HOOKLINE_SECRET_KEY: randomBytes(32).toString('base64url'), ...options.env },
  });
}

export interface VendedEndpoint {
  readonly id: string;
  readonly slug: string;
  readonly token: string;
  readonly url: string;
  readonly ingestUrl: string;
  readonly webhookId: string;
}

let counter = 0;

/** Vends through the domain handler, as the operator API does, then waits for the read models. */
export async function vend(
  server: TestServer,
  options: {
    readonly operator?: string;
    readonly verbs?: readonly Verb[];
    readonly queue?: string;
    readonly queues?: readonly string[];
    readonly expiresAt?: Date | null;
  } = {},
): Promise<VendedEndpoint> {
  const { store, clock } = server.runtime;
  const operator = options.operator ?? 'alice';
  const v = await vendEndpoint(
    { store, clock, checkReplayTarget: async () => {} },
    {
      operator,
      human: operator,
      name: `Agent ${++counter} ${Math.random().toString(36).slice(2, 7)}`,
      queues: options.queues ?? [options.queue ?? 'inbox'],
      verbs: options.verbs ?? [...ALL_VERBS],
      expiresAt: options.expiresAt ?? null,
      replayTargets: [],
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

/** An operator hand-off (spec 4.13) through the domain handler. */
export async function push(
  server: TestServer,
  endpoint: VendedEndpoint,
  todo: { readonly title: string; readonly payload?: unknown; readonly kind?: string; readonly key?: string },
  operator = 'alice',
) {
  const { store, clock, logger } = server.runtime;
  return pushTodo(
    {
      store,
      clock,
      recorder: createDeliveryRecorder({ store, clock }),
      followUps: createFollowUps({ logger }),
    },
    {
      ref: endpoint.slug,
      operator,
      human: operator,
      title: todo.title,
      queue: undefined,
      kind: todo.kind ?? 'operator',
      payload: todo.payload ?? null,
      key: todo.key ?? null,
      sourceIp: null,
      headers: {},
    },
  );
}

// Every read model has applied every commit so far: the API tests' helper, for the MCP tests too.
export { settled };

export interface Agent {
  readonly client: Client;
  readonly transport: StreamableHTTPClientTransport;
  /** URIs of every resources/updated notification received, in order. */
  readonly rung: string[];
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult>;
  /** Calls and returns the structured result; throws if the tool reported an error. */
  ok<T = Record<string, unknown>>(name: string, args?: Record<string, unknown>): Promise<T>;
  /** Calls and returns the error code of an `isError` result; throws if it succeeded. */
  refused(name: string, args?: Record<string, unknown>): Promise<string>;
  waitForRing(uri: string, count?: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** The MCP SDK's real client over Streamable HTTP, with the endpoint bearer. */
export async function connectAgent(endpoint: {
  readonly url: string;
  readonly token: string;
}): Promise<Agent> {
  const client = new Client({ name: 'hookline-test-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(endpoint.url), {
    requestInit: { headers: { Authorization: `Bearer ${endpoint.token}` } },
  });
  const rung: string[] = [];
  const listeners = new Set<() => void>();
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    rung.push(n.params.uri);
    for (const l of listeners) l();
  });
  await client.connect(transport);

  const call = async (name: string, args: Record<string, unknown> = {}) =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;

  return {
    client,
    transport,
    rung,
    call,
    async ok<T>(name: string, args: Record<string, unknown> = {}) {
      const r = await call(name, args);
      if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r.structuredContent ?? r.content)}`);
      return r.structuredContent as T;
    },
    async refused(name: string, args: Record<string, unknown> = {}) {
      const r = await call(name, args);
      if (!r.isError) throw new Error(`${name} succeeded: ${JSON.stringify(r.structuredContent)}`);
      return (r.structuredContent as { code: string }).code;
    },
    waitForRing(uri: string, count = 1, timeoutMs = 30_000) {
      const seen = () => rung.filter((u) => u === uri).length >= count;
      return new Promise<void>((resolve, reject) => {
        if (seen()) return resolve();
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(`no doorbell for ${uri} (${count}) within ${timeoutMs} ms; rung: ${rung.join(', ')}`),
          );
        }, timeoutMs);
        const check = () => {
          if (!seen()) return;
          clearTimeout(timer);
          listeners.delete(check);
          resolve();
        };
        listeners.add(check);
      });
    },
    close: async () => {
      await transport.terminateSession().catch(() => {});
      await client.close();
    },
  };
}

/** Polls until `probe` holds (the read models and the expiry job run on their own time). */
export async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
