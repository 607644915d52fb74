import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { EndpointFacts } from '../domain/endpoint/state.ts';
import { HooklineError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { releaseAnsweredStreams } from '../mcp/answered-streams.ts';
import type { EndpointAuth } from '../mcp/auth.ts';
import type { SessionRegistry } from '../mcp/sessions.ts';

export interface McpRoutesDeps {
  readonly logger: Logger;
  readonly authenticate: EndpointAuth;
  /** Returns an error message when Host/Origin fail the DNS-rebinding check. */
  readonly checkRebinding: (request: {
    readonly host: string | undefined;
    readonly origin: string | undefined;
    readonly localAddress: string | undefined;
    readonly localPort: number | undefined;
  }) => string | undefined;
  readonly sessions: SessionRegistry;
  /** A session's server, for the endpoint that opens it (its instructions name that endpoint's verbs). */
  readonly newServer: (endpoint: EndpointFacts) => Promise<Server>;
  /**
   * A POST's first read, with the endpoint's stream revision in the same statement (claim_next's
   * first candidates): undefined when the body calls for none. Its value reaches the tool as
   * `authInfo.extra.readAhead` when the revision shows the endpoint as kept still current.
   */
  readonly readAhead?: (
    endpoint: EndpointFacts,
    body: unknown,
    streamId: string,
  ) => Promise<{ readonly revision: bigint; readonly value: unknown } | undefined>;
  /** A session with no open stream and no request for this long is closed (default 30 min). */
  readonly idleSessionMs?: number;
}

const IDLE_SESSION_MS = 30 * 60_000;

/**
 * The MCP SDK's transport and protocol schemas, loaded on the first MCP request: a process that
 * serves no agent does not hold them (about 30 MB).
 */
let sdk:
  | Promise<{
      StreamableHTTPServerTransport: typeof StreamableHTTPServerTransport;
      isInitializeRequest: (value: unknown) => boolean;
    }>
  | undefined;
const loadSdk = () => {
  sdk ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then(([transport, types]) => ({
    StreamableHTTPServerTransport: transport.StreamableHTTPServerTransport,
    isInitializeRequest: types.isInitializeRequest,
  }));
  return sdk;
};

/**
 * `{base_url}/mcp/<slug>` over Streamable HTTP (POST, GET for the notification stream, DELETE to
 * end a session). Host and Origin are checked first, then the endpoint bearer; any bearer
 * failure is 401 with a plain `WWW-Authenticate: Bearer` and no resource metadata, so an MCP
 * client is never sent to the operators' authorization server (design.md "MCP"). A POST whose
 * bearer passes on the endpoint as kept is confirmed by the handler, once its body is parsed, with
 * the call's first read (`readAhead`: the endpoint's stream revision in the same statement), or
 * alone; either way after the request arrived, and before anything else runs. The transport
 * then gets the raw request and response, with the body Fastify already parsed.
 */
export function createMcpRoutes(deps: McpRoutesDeps) {
  const { sessions, logger } = deps;
  const endpoints = new WeakMap<FastifyRequest, EndpointFacts>();
  /** POSTs whose bearer passed on the endpoint as kept: confirmed by the handler's first read. */
  const onKept = new WeakMap<FastifyRequest, NonNullable<ReturnType<EndpointAuth['onKept']>>>();

  /** The bearer check, and its 401's `WWW-Authenticate` header. */
  const authenticate = async (request: FastifyRequest, reply: FastifyReply): Promise<EndpointFacts> => {
    const { slug } = request.params as { slug: string };
    const authorization = request.headers.authorization;
    try {
      return await deps.authenticate(slug, authorization);
    } catch (err) {
      if (err instanceof HooklineError && err.code === 'unauthorized') {
        request.log.info({ reason: err.cause, slug }, 'mcp: bearer refused');
        reply.header(
          'www-authenticate',
          authorization
            ? 'Bearer realm="hookline-mcp", error="invalid_token"'
            : 'Bearer realm="hookline-mcp"',
        );
      }
      throw err;
    }
  };

  const jsonRpcError = (reply: FastifyReply, status: number, code: number, message: string) =>
    reply.code(status).type('application/json').send({ jsonrpc: '2.0', error: { code, message }, id: null });

  const serve = async (
    request: FastifyRequest,
    reply: FastifyReply,
    transport: StreamableHTTPServerTransport,
  ): Promise<void> => {
    reply.hijack();
    try {
      await transport.handleRequest(request.raw, reply.raw, request.body);
      // The SDK keeps each JSON answer's stream entry (answered-streams.ts): dropped here.
      if (request.method === 'POST') releaseAnsweredStreams(transport);
    } catch (err) {
      logger.error({ err }, 'mcp: request failed');
      if (!reply.raw.headersSent) reply.raw.writeHead(500, { 'content-type': 'application/json' });
      reply.raw.end();
    }
  };

  const routes = async (scope: FastifyInstance) => {
    scope.addHook('onRequest', async (request, reply) => {
      const refused = deps.checkRebinding({
        host: request.headers.host,
        origin: request.headers.origin,
        localAddress: request.socket.localAddress,
        localPort: request.socket.localPort,
      });
      if (refused) throw new HooklineError('forbidden', refused);
      if (request.method === 'POST' && deps.readAhead) {
        const { slug } = request.params as { slug: string };
        const kept = deps.authenticate.onKept(slug, request.headers.authorization);
        // Confirmed (or checked again) by the handler, with the body's first read.
        if (kept) return void onKept.set(request, kept);
      }
      endpoints.set(request, await authenticate(request, reply));
    });
    // A POST whose bearer passed only on the state kept, refused before its handler ran (a body
    // that does not parse): the bearer is decided first, as for every other request, so a revoked
    // bearer is 401 whatever the body. The errors plugin then answers whichever error stands.
    scope.setErrorHandler(async (error, request, reply) => {
      if (onKept.has(request)) {
        onKept.delete(request);
        await authenticate(request, reply);
      }
      throw error;
    });

    scope.route({
      method: ['GET', 'POST', 'DELETE'],
      url: '/mcp/:slug',
      handler: async (request, reply) => {
        let endpoint = endpoints.get(request);
        let readAhead: unknown;
        const kept = onKept.get(request);
        onKept.delete(request); // decided here from now on
        if (!endpoint && kept && deps.readAhead) {
          // The bearer passed on the endpoint as kept: its stream's revision, read now with the
          // call's first read (or alone), says whether that state is still the endpoint's.
          const ahead = await deps.readAhead(kept.facts, request.body, kept.streamId);
          if (ahead?.revision === kept.revision) {
            endpoint = kept.facts;
            readAhead = ahead.value;
          }
        }
        endpoint ??= await authenticate(request, reply);
        // The tools read the endpoint as authenticated by this very request.
        const auth: AuthInfo = {
          token: 'endpoint-bearer',
          clientId: endpoint.id,
          scopes: [...endpoint.verbs],
          extra: { endpoint, ...(readAhead === undefined ? {} : { readAhead }) },
        };
        (request.raw as IncomingMessage & { auth?: AuthInfo }).auth = auth;

        const header = request.headers['mcp-session-id'];
        const sessionId = Array.isArray(header) ? header[0] : header;
        if (sessionId !== undefined) {
          const session = sessions.get(sessionId);
          // A session is bound to the endpoint that opened it: another endpoint's bearer finds nothing.
          if (!session || session.endpointId !== endpoint.id) {
            return jsonRpcError(reply, 404, -32001, 'Session not found');
          }
          session.lastSeen = Date.now();
          if (request.method === 'GET') {
            session.openStreams++;
            reply.raw.once('close', () => {
              session.openStreams--;
              session.lastSeen = Date.now();
            });
          }
          return serve(request, reply, session.transport);
        }
        const { StreamableHTTPServerTransport, isInitializeRequest } = await loadSdk();
        if (request.method !== 'POST' || !isInitializeRequest(request.body)) {
          return jsonRpcError(reply, 400, -32000, 'Bad Request: no valid session id (initialize first)');
        }

        const server = await deps.newServer(endpoint);
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          // A tool call is answered as plain JSON; notifications go out on the session's GET stream.
          enableJsonResponse: true,
          onsessioninitialized: (id) => {
            sessions.add({
              id,
              endpointId: endpoint.id,
              transport,
              server,
              subscriptions: new Set(),
              lastSeen: Date.now(),
              openStreams: 0,
            });
          },
          onsessionclosed: (id) => sessions.remove(id),
        });
        // Set before connect: the server chains its own close handler after this one.
        transport.onclose = () => {
          if (transport.sessionId) sessions.remove(transport.sessionId);
        };
        await server.connect(transport);
        return serve(request, reply, transport);
      },
    });
  };

  return fp(
    async (app) => {
      // Open notification streams would hold the server open: end every session before it closes.
      app.addHook('preClose', async () => {
        clearInterval(reaper);
        await sessions.closeAll();
      });
      const reaper = setInterval(() => {
        void sessions.reapIdle(Date.now(), deps.idleSessionMs ?? IDLE_SESSION_MS).then((n) => {
          if (n > 0) logger.info({ closed: n }, 'mcp: idle sessions closed');
        });
      }, 60_000);
      reaper.unref();
      await app.register(routes);
    },
    { name: 'hookline-mcp', dependencies: ['hookline-errors'] },
  );
}
