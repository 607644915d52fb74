import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.ts';
import { HooklineError } from '../errors.ts';
import type { EndpointWebhookReceiver, WebhookTarget } from '../ingest/endpoint-webhook.ts';
import { useRawBodies } from './raw-body.ts';
import { redactUrl } from './redact-url.ts';

interface Pending {
  readonly target: WebhookTarget;
  readonly contentType: string | undefined;
}

const EMPTY = new Uint8Array(0);

/**
 * `POST /webhooks/w/<token>`: an endpoint-owned webhook (release 0.3.0), with the IngestAck,
 * problem documents and status codes of spec 4.1/4.2 in design.md's check order: 404 (unknown
 * token, revoked owner), 413 (Content-Length before reading, else while reading), 400 (the chat
 * scheme's missing timestamp), 401 (the signature in the webhook's scheme, when it has a secret),
 * 400 (body), then 202 (200 with the challenge for a chat platform's url_verification).
 */
export function createEndpointWebhookRoutes(deps: {
  readonly config: Config;
  readonly receiver: EndpointWebhookReceiver;
}) {
  const limit = deps.config.maxBodyBytes;
  const pending = new WeakMap<FastifyRequest, Pending>();

  const routes = async (scope: FastifyInstance) => {
    useRawBodies(scope, limit);

    scope.addHook('onRequest', async (request, reply) => {
      const { token } = request.params as { token: string };
      const target = await deps.receiver.lookup(token);
      const declared = Number(request.headers['content-length']);
      if (Number.isFinite(declared) && declared > limit) {
        reply.header('connection', 'close');
        throw new HooklineError('payload_too_large', `the body exceeds ${limit} bytes`);
      }
      // Hidden from Fastify's own media-type refusal (415), judged after the signature instead.
      const contentType = request.headers['content-type'];
      pending.set(request, { target, contentType });
      if (contentType !== undefined) delete request.raw.headers['content-type'];
    });

    const logSerializers = {
      req: (req: FastifyRequest) => ({ method: req.method, url: redactUrl(req.url), remoteAddress: req.ip }),
    };

    scope.post(
      '/webhooks/w/:token',
      { logSerializers },
      async (request: FastifyRequest, reply: FastifyReply) => {
        const p = pending.get(request)!;
        if (p.contentType !== undefined) request.raw.headers['content-type'] = p.contentType;
        const { token } = request.params as { token: string };
        try {
          const outcome = await deps.receiver.receive(p.target, {
            token,
            headers: request.headers,
            body: request.body instanceof Uint8Array ? request.body : EMPTY,
            remoteAddress: request.socket.remoteAddress,
          });
          if (outcome.kind === 'handshake') return reply.code(200).send({ challenge: outcome.challenge });
          return reply.code(202).send(outcome.ack);
        } catch (e) {
          if (e instanceof HooklineError && e.status === 401) {
            request.log.warn(
              { webhook: p.target.webhook.id, code: e.code, reason: e.message, url: redactUrl(request.url) },
              'webhook rejected',
            );
          }
          throw e;
        }
      },
    );
  };

  return fp(
    async (app) => {
      await app.register(routes);
    },
    { name: 'hookline-endpoint-webhooks' },
  );
}
