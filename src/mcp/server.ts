import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { queueCounts } from '../../projections/todos.queries.ts';
import type { EndpointFacts } from '../domain/endpoint/state.ts';
import { isVerb } from '../domain/endpoint/verbs.ts';
import { asHooklineError } from '../errors.ts';
import { instructionsFor } from './instructions.ts';
import { ALL_QUEUES_URI, queueOfUri, queueUri } from './queues.ts';
import { firstPageOf } from './read-ahead.ts';
import { failure } from './result.ts';
import type { McpServices } from './services.ts';
import type { SessionRegistry } from './sessions.ts';
import { drainQueues } from './tools/scope.ts';
import type { McpTool } from './tools/types.ts';

/** The endpoint this very request authenticated as (src/http/mcp.ts puts it on `req.auth`). */
export function endpointOf(authInfo: AuthInfo | undefined): EndpointFacts {
  const endpoint = authInfo?.extra?.endpoint as EndpointFacts | undefined;
  if (!endpoint) throw new McpError(ErrorCode.InternalError, 'request not authenticated');
  return endpoint;
}

/** The first problem of a tool's arguments, as the sentence its schema gives (with the field when it does not name it). */
function argumentSentence(error: z.ZodError): string {
  const first = error.issues[0];
  if (!first) return 'The arguments are not valid.';
  const field = first.path.join('.');
  const message = field && !first.message.includes(field) ? `${field}: ${first.message}` : first.message;
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more problems)` : '';
  return `${message}${more}`;
}

/** How long a read waits for the read models to pass the session's own writes. */
const READ_YOUR_WRITES_MS = 2000;

export interface SessionServerDeps {
  readonly services: McpServices;
  readonly tools: readonly McpTool[];
  readonly sessions: SessionRegistry;
}

/**
 * One low-level MCP server per session. Tools are listed and dispatched here rather than through
 * McpServer so that bad arguments stay protocol errors (InvalidParams) and expected refusals are
 * `isError` results with a stable code (style.md §10); a verb the endpoint does not hold is
 * neither listed nor callable (`forbidden`). `opener`: the endpoint that opened the session; the
 * instructions name the verbs it holds then.
 */
export function createSessionServer(deps: SessionServerDeps, opener: EndpointFacts): Server {
  const { services, tools, sessions } = deps;
  const byName = new Map(tools.map((t) => [t.name as string, t]));
  const listed = tools.map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: z.toJSONSchema(t.input, { io: 'input' }) as { type: 'object' },
    annotations: { title: t.title, ...t.annotations },
  }));

  /**
   * Read your own write: a session's read after one of its writes (claim, then list_todos) waits,
   * bounded, for the read models to pass every commit made before the read, so it sees the write.
   * That is the committed head, not the visible one: on PostgreSQL the write can stay hidden from
   * readers behind an older open transaction (a projection's), and a wait for the visible head
   * would return before any read model had it. A late read model delays the read by at most the
   * bound; it never fails it.
   */
  const catchUp = async (sessionId: string | undefined): Promise<void> => {
    const session = sessionId ? sessions.get(sessionId) : undefined;
    if (!session?.wrote) return;
    session.wrote = false;
    const { store, projections, logger } = services.runtime;
    const head = await store.committedPosition();
    await projections
      .waitFor(head, { timeoutMs: READ_YOUR_WRITES_MS })
      .catch((err: unknown) => logger.warn({ err, position: head }, 'mcp: read models lag behind a write'));
  };
  const wrote = (sessionId: string | undefined): void => {
    const session = sessionId ? sessions.get(sessionId) : undefined;
    if (session) session.wrote = true;
  };

  const server = new Server(
    { name: 'hookline', title: 'hookline', version: services.runtime.config.version },
    {
      capabilities: { tools: { listChanged: false }, resources: { subscribe: true, listChanged: false } },
      // Sent once, at initialize: a later PATCH narrows the tools, not what was said.
      instructions: instructionsFor(opener.verbs),
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
    const endpoint = endpointOf(extra.authInfo);
    return { tools: listed.filter((t) => endpoint.verbs.includes(t.name)) };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const endpoint = endpointOf(extra.authInfo);
    const name = request.params.name;
    if (isVerb(name) && !endpoint.verbs.includes(name)) {
      return failure('forbidden', `this endpoint does not hold the verb ${name}`);
    }
    const tool = byName.get(name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Tool ${name} not found`);
    const parsed = tool.input.safeParse(request.params.arguments ?? {});
    if (!parsed.success) {
      if (tool.argumentErrors === 'result')
        return failure('invalid_argument', argumentSentence(parsed.error));
      throw new McpError(
        ErrorCode.InvalidParams,
        `Invalid arguments for tool ${name}: ${z.prettifyError(parsed.error)}`,
      );
    }
    const reads = tool.annotations.readOnlyHint === true;
    try {
      if (reads) await catchUp(extra.sessionId);
      const firstPage = firstPageOf(extra.authInfo?.extra);
      return await tool.run(
        { services, endpoint, sessionId: extra.sessionId ?? null, ...(firstPage ? { firstPage } : {}) },
        parsed.data,
      );
    } catch (err) {
      const known = asHooklineError(err);
      if (known && known.status < 500) return failure(known.code, known.message);
      services.runtime.logger.error({ err, tool: name }, 'mcp: tool failed');
      const message = known ? known.message : 'internal error';
      throw new McpError(ErrorCode.InternalError, message);
    } finally {
      if (!reads) wrote(extra.sessionId);
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, async (_request, extra) => {
    const endpoint = endpointOf(extra.authInfo);
    const all = {
      uri: ALL_QUEUES_URI,
      name: 'all queues',
      title: 'All queues',
      description:
        'Every queue this endpoint drains. Subscribe to hear each queue ring (under the queue’s own URI).',
      mimeType: 'application/json',
    };
    return {
      resources: [
        all,
        ...drainQueues(endpoint).map((q) => ({
          uri: queueUri(q),
          name: `queue ${q}`,
          title: `Queue ${q}`,
          description: `Todos on queue ${q}. Subscribe to be told when work becomes claimable here.`,
          mimeType: 'application/json',
        })),
      ],
    };
  });

  /** The queues a resource URI names: one, or all of them for `hookline://queues`. */
  const scopedQueues = (uri: string, endpoint: EndpointFacts): string[] =>
    uri === ALL_QUEUES_URI ? drainQueues(endpoint) : [scopedQueue(uri, endpoint)];

  const scopedQueue = (uri: string, endpoint: EndpointFacts): string => {
    const queue = queueOfUri(uri);
    if (queue === undefined || !drainQueues(endpoint).includes(queue)) {
      throw new McpError(ErrorCode.InvalidParams, `Resource ${uri} not found`);
    }
    return queue;
  };

  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => {
    const endpoint = endpointOf(extra.authInfo);
    const queues = scopedQueues(request.params.uri, endpoint);
    await catchUp(extra.sessionId);
    const bodies = await Promise.all(
      queues.map(async (queue) => {
        const counts = await queueCounts(services.runtime.db, endpoint.id, queue);
        return {
          queue,
          pending: counts.pending,
          claimed: counts.claimed,
          oldest_pending_at: counts.oldestPendingAt ? counts.oldestPendingAt.toISOString() : null,
        };
      }),
    );
    const body = request.params.uri === ALL_QUEUES_URI ? { queues: bodies } : bodies[0];
    return {
      contents: [{ uri: request.params.uri, mimeType: 'application/json', text: JSON.stringify(body) }],
    };
  });

  server.setRequestHandler(SubscribeRequestSchema, async (request, extra) => {
    const endpoint = endpointOf(extra.authInfo);
    scopedQueues(request.params.uri, endpoint);
    const session = extra.sessionId ? sessions.get(extra.sessionId) : undefined;
    session?.subscriptions.add(request.params.uri);
    return {};
  });

  server.setRequestHandler(UnsubscribeRequestSchema, async (request, extra) => {
    const session = extra.sessionId ? sessions.get(extra.sessionId) : undefined;
    session?.subscriptions.delete(request.params.uri);
    return {};
  });

  return server;
}
