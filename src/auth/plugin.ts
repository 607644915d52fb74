import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Kysely } from 'kysely';
import type Provider from 'oidc-provider';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import { isSameOriginRequest } from '../http/same-origin.ts';
import { signInHelmet } from '../http/security-headers.ts';
import type { OperatorAuth } from './index.ts';
import { sweepExpiredOAuthRecords } from './oauth-adapter.ts';
import { API_SCOPE, basePathOf, OAUTH_ROUTES } from './oauth-settings.ts';
import { renderConsent, renderMessage } from './pages.ts';

export interface OAuthPluginDeps {
  readonly config: Config;
  readonly db: Kysely<Database>;
  readonly auth: OperatorAuth;
}

/**
 * Mounts the authorization server. oidc-provider is a Koa application: its routes are handed the
 * raw request and response (the reply hijacked), and their scope has no body parser, so the
 * form bodies reach oidc-provider unread. The consent page and its form posts are ours.
 */
export function oauthPlugin(deps: OAuthPluginDeps) {
  return fp(
    async (app) => {
      await app.register(async (scope) => mount(scope, deps));
      const sweep = setInterval(() => {
        sweepExpiredOAuthRecords(deps.db).catch((err: unknown) =>
          app.log.warn({ err }, 'oauth sweep failed'),
        );
      }, 10 * 60_000);
      sweep.unref();
      app.addHook('onClose', async () => clearInterval(sweep));
    },
    { name: 'hookline-oauth' },
  );
}

async function mount(scope: FastifyInstance, deps: OAuthPluginDeps): Promise<void> {
  const { config, auth } = deps;
  const base = new URL(config.baseUrl);
  const basePath = basePathOf(config.baseUrl);
  let callback: Promise<ReturnType<Provider['callback']>> | undefined;

  // The security headers come from the one helmet registration, with the sign-in pages' policy.
  scope.addHook('onRoute', (route) => {
    route.config = { ...(route.config ?? {}), helmet: signInHelmet } as typeof route.config;
  });
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

  /** oidc-provider builds its URLs from the request: make them name the configured base URL. */
  const canonical = (request: FastifyRequest): IncomingMessage => {
    const raw = request.raw;
    raw.headers['x-forwarded-proto'] = base.protocol.slice(0, -1);
    raw.headers['x-forwarded-host'] = base.host;
    raw.headers['x-forwarded-for'] = request.ip;
    return raw;
  };

  const handOff = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    callback ??= auth.provider().then((provider) => provider.callback());
    const handle = await callback;
    reply.hijack();
    await handle(canonical(request), reply.raw);
  };

  scope.route({ method: ['GET', 'POST'], url: OAUTH_ROUTES.authorization, handler: handOff });
  scope.get(`${OAUTH_ROUTES.authorization}/:uid`, handOff);
  scope.route({ method: ['POST', 'OPTIONS'], url: OAUTH_ROUTES.token, handler: handOff });
  scope.route({ method: ['POST', 'OPTIONS'], url: OAUTH_ROUTES.revocation, handler: handOff });
  scope.get(OAUTH_ROUTES.jwks, handOff);
  // RFC 8414 metadata at the issuer's well-known path; oidc-provider serves it under its OIDC name.
  scope.get(OAUTH_ROUTES.metadata, async (request, reply) => {
    request.raw.url = '/.well-known/openid-configuration';
    await handOff(request, reply);
  });

  const page = (reply: FastifyReply, status: number, html: string) =>
    reply.code(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(html);

  const expired = (reply: FastifyReply) =>
    page(
      reply,
      400,
      renderMessage('Sign-in expired', 'This sign-in is no longer pending. Run `hookline login` again.'),
    );

  /** The consent forms post same-origin only: a cross-site page cannot approve a sign-in. */
  const sameOrigin = (request: FastifyRequest): boolean =>
    isSameOriginRequest(request.headers, config.baseUrl);

  const details = async (request: FastifyRequest<{ Params: { uid: string } }>, reply: FastifyReply) => {
    try {
      const provider = await auth.provider();
      const interaction = await provider.interactionDetails(canonical(request), reply.raw);
      return interaction.uid === request.params.uid ? interaction : undefined;
    } catch {
      return undefined;
    }
  };

  const finish = async (
    request: FastifyRequest,
    reply: FastifyReply,
    result: Parameters<Provider['interactionResult']>[2],
  ) => {
    const provider = await auth.provider();
    const to = await provider.interactionResult(request.raw, reply.raw, result, {
      mergeWithLastSubmission: false,
    });
    return reply.code(303).header('cache-control', 'no-store').redirect(to, 303);
  };

  const interactionPath = `${OAUTH_ROUTES.interaction}/:uid`;

  scope.get<{ Params: { uid: string } }>(interactionPath, async (request, reply) => {
    const interaction = await details(request, reply);
    if (!interaction) return expired(reply);
    const who = auth.identify(request.raw);
    if (!who.ok) return finish(request, reply, { error: 'access_denied', error_description: who.reason });
    const clientId = String(interaction.params.client_id);
    const client = await (await auth.provider()).Client.find(clientId);
    const action = `${basePath}${OAUTH_ROUTES.interaction}/${encodeURIComponent(interaction.uid)}`;
    return page(
      reply,
      200,
      renderConsent({
        human: who.human,
        via: who.via,
        clientName: client?.clientName ?? clientId,
        clientId,
        resource: auth.resource,
        redirectUri: String(interaction.params.redirect_uri),
        confirmAction: `${action}/confirm`,
        abortAction: `${action}/abort`,
      }),
    );
  });

  scope.post<{ Params: { uid: string } }>(`${interactionPath}/confirm`, async (request, reply) => {
    if (!sameOrigin(request)) {
      return page(
        reply,
        403,
        renderMessage('Cross-site request refused', 'Approve the sign-in from its own page.'),
      );
    }
    const interaction = await details(request, reply);
    if (!interaction) return expired(reply);
    const who = auth.identify(request.raw);
    if (!who.ok) return finish(request, reply, { error: 'access_denied', error_description: who.reason });
    const clientId = String(interaction.params.client_id);
    const { Grant } = await auth.provider();
    const existing = interaction.grantId ? await Grant.find(interaction.grantId) : undefined;
    const grant =
      existing && existing.accountId === who.human && existing.clientId === clientId
        ? existing
        : new Grant({ accountId: who.human, clientId });
    grant.addResourceScope(auth.resource, API_SCOPE);
    const grantId = await grant.save();
    return finish(request, reply, {
      login: { accountId: who.human, remember: false },
      consent: { grantId },
    });
  });

  scope.post<{ Params: { uid: string } }>(`${interactionPath}/abort`, async (request, reply) => {
    if (!sameOrigin(request)) {
      return page(
        reply,
        403,
        renderMessage('Cross-site request refused', 'Decline the sign-in from its own page.'),
      );
    }
    const interaction = await details(request, reply);
    if (!interaction) return expired(reply);
    return finish(request, reply, { error: 'access_denied', error_description: 'the sign-in was declined' });
  });
}
