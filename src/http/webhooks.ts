import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.ts';
import { GENERIC_NAME_PATTERN, genericProviderName } from '../domain/provider/names.ts';
import type { ProviderState } from '../domain/provider/state.ts';
import { HooklineError } from '../errors.ts';
import type { Ingestion } from '../ingest/index.ts';
import { isSignedProvider } from '../ingest/signatures/index.ts';
import { parseTrustedProxies, resolveSourceIp } from '../ingest/source-ip.ts';
import { useRawBodies } from './raw-body.ts';
import { redactUrl } from './redact-url.ts';

export interface WebhookRoutesDeps {
  readonly config: Config;
  readonly ingestion: Pick<Ingestion, 'directory' | 'receiver'>;
}

interface Pending {
  readonly provider: ProviderState;
  /** The request's Content-Type, moved aside so every body reaches the raw parser (see below). */
  readonly contentType: string | undefined;
}

const EMPTY = new Uint8Array(0);

/**
 * The instance receivers of spec 4.1 and 4.2. Check order (design.md): 404 unknown or
 * unconfigured, then 413 (Content-Length before reading, else while reading), then 403 disabled,
 * then signature / token, then body type; only then the durable append and the 202.
 */
export function createWebhookRoutes(deps: WebhookRoutesDeps): FastifyPluginAsync {
  const { config, ingestion } = deps;
  const limit = config.maxBodyBytes;
  const trusted = parseTrustedProxies(config.trustedProxies);
  const pending = new WeakMap<FastifyRequest, Pending>();

  async function resolve(request: FastifyRequest): Promise<ProviderState> {
    const params = request.params as { provider?: string; name?: string };
    let name: string | undefined;
    if (params.name !== undefined)
      name = GENERIC_NAME_PATTERN.test(params.name) ? genericProviderName(params.name) : undefined;
    else if (params.provider !== undefined && isSignedProvider(params.provider)) name = params.provider;
    const provider = name === undefined ? undefined : await ingestion.directory.lookup(name);
    if (!provider)
      throw new HooklineError('not_found', 'no such webhook receiver (unknown or not configured)');
    return provider;
  }

  const routes = async (scope: FastifyInstance) => {
    useRawBodies(scope, limit);

    scope.addHook('onRequest', async (request, reply) => {
      const provider = await resolve(request);
      const declared = Number(request.headers['content-length']);
      if (Number.isFinite(declared) && declared > limit) {
        // The body stays unread: close the connection rather than drain it.
        reply.header('connection', 'close');
        throw new HooklineError('payload_too_large', `the body exceeds ${limit} bytes`);
      }
      // Fastify refuses an unknown or malformed Content-Type (415) before any handler runs, which
      // would come before the signature check. Hidden here, every body reaches the raw parser
      // above; the type is judged after the signature (checks 6 and 7) and restored for storage.
      const contentType = request.headers['content-type'];
      pending.set(request, { provider, contentType });
      if (contentType !== undefined) delete request.raw.headers['content-type'];
    });

    const handler = async (request: FastifyRequest, reply: import('fastify').FastifyReply) => {
      const p = pending.get(request)!;
      if (p.contentType !== undefined) request.raw.headers['content-type'] = p.contentType;
      const params = request.params as { token?: string };
      const query = request.query as Record<string, unknown>;
      try {
        const outcome = await ingestion.receiver.receive(p.provider, {
          headers: request.headers,
          body: request.body instanceof Uint8Array ? request.body : EMPTY,
          remoteAddress: request.socket.remoteAddress,
          pathToken: params.token,
          queryToken: typeof query.token === 'string' ? query.token : undefined,
        });
        if (outcome.kind === 'handshake') return reply.code(200).send({ challenge: outcome.challenge });
        return reply.code(202).send(outcome.ack);
      } catch (e) {
        if (e instanceof HooklineError && (e.status === 401 || e.status === 403)) {
          // Spec 4.1 rule 2: only a redacted rejection is logged (no signature, no token, no body).
          request.log.warn(
            {
              provider: p.provider.name,
              code: e.code,
              reason: e.message,
              url: redactUrl(request.url),
              source_ip: resolveSourceIp(
                request.socket.remoteAddress,
                request.headers['x-forwarded-for'],
                trusted,
              ),
            },
            'webhook rejected',
          );
        }
        throw e;
      }
    };

    // The request log lines of these routes carry the URL without its token (path or query).
    const logSerializers = {
      req: (req: FastifyRequest) => ({
        method: req.method,
        url: redactUrl(req.url),
        host: req.host,
        remoteAddress: req.ip,
        remotePort: req.socket?.remotePort,
      }),
    };
    scope.post('/webhooks/:provider', { logSerializers }, handler);
    scope.post('/webhooks/generic/:name', { logSerializers }, handler);
    scope.post('/webhooks/generic/:name/:token', { logSerializers }, handler);
  };

  return fp(
    async (app) => {
      await app.register(routes);
    },
    { name: 'hookline-webhooks' },
  );
}
