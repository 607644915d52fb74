import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config.ts';
import { GENERIC_NAME_PATTERN, genericProviderName } from '../../domain/provider/names.ts';
import type { ProviderState } from '../../domain/provider/state.ts';
import { HooklineError } from '../../errors.ts';
import type { Ingestion } from '../../ingest/index.ts';
import { isTrustedPeer, parseTrustedProxies } from '../../ingest/source-ip.ts';
import { generateToken, hashToken } from '../../ingest/token.ts';
import { renderFragment } from './fragments.ts';
import { securityHeaders } from './security.ts';

export interface ProviderRoutesDeps {
  readonly config: Config;
  readonly ingestion: Pick<Ingestion, 'directory'>;
}

/** What both routes show of a provider; `token` only in the response that created it. */
export interface ProviderView {
  readonly name: string;
  readonly kind: string;
  readonly trust_mode: string;
  readonly enabled: boolean;
  readonly path: string | null;
  readonly ingest_url: string | null;
  readonly token?: string;
}

/**
 * The HTML fragment of a provider: its enable/disable toggle and, once, a new token. Kept to one
 * function so the screens can swap it for their template: it is templates/fragments/provider-toggle.njk.
 */
export function renderProviderFragment(view: ProviderView): string {
  return renderFragment('fragments/provider-toggle.njk', { provider: view });
}

/** The Host names that only this machine can answer for: a DNS-rebinding page never has one. */
function isLoopbackHost(host: string): boolean {
  let name: string;
  try {
    name = new URL(`http://${host}`).hostname;
  } catch {
    return false;
  }
  return name === 'localhost' || name === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

/** A request that asks for JSON and not HTML: the CLI and scripts, never a browser's form post. */
const wantsJsonOnly = (accept: string | undefined): boolean =>
  /\bapplication\/json\b/i.test(accept ?? '') && !/\btext\/html\b/i.test(accept ?? '');

/**
 * Browser safety (design.md, docs/reference/screens.md): a form post must come from one of our own pages.
 * 1. `Sec-Fetch-Site`, which browsers send to https and loopback origins, decides when present:
 *    `same-origin`, or `none` (the user's own action), passes. A DNS-rebinding page never gets
 *    `same-origin` here: over http its browser sends no Sec-Fetch-Site, and over https our server
 *    cannot present a certificate for the attacker's name.
 * 2. Else `Origin`, which the Fetch standard puts on every POST a browser makes (`null` from
 *    sandboxes and cross-site redirects), must be the origin of HOOKLINE_BASE_URL. The request's
 *    own Host stands in for it only when that Host is a loopback name (localhost, 127.x, [::1]), so
 *    `http://127.0.0.1:<port>` works without a base URL: a DNS-rebinding page is served under its
 *    own host name, which is what its Host and Origin then say, and that is never loopback.
 * 3. Neither header: no browser sends such a POST. A client asking for JSON only (the CLI, a
 *    script) passes; one asking for HTML is a form post from an old or odd browser and is refused.
 */
export function assertSameOrigin(request: FastifyRequest, config: Config): void {
  const refuse = () => new HooklineError('cross_site', 'cross-site form posts are refused');
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') {
    if (site === 'same-origin' || site === 'none') return;
    throw refuse();
  }
  const origin = request.headers.origin;
  if (origin === undefined) {
    if (wantsJsonOnly(request.headers.accept)) return;
    throw refuse();
  }
  if (origin === new URL(config.baseUrl).origin) return;
  const host = request.headers.host;
  if (host && isLoopbackHost(host)) {
    const own = ['http', 'https'].map((scheme) => new URL(`${scheme}://${host}`).origin);
    if (own.includes(origin)) return;
  }
  throw refuse();
}

const wantsJson = (request: FastifyRequest) => /\bapplication\/json\b/i.test(request.headers.accept ?? '');

function field(request: FastifyRequest, name: string): string | undefined {
  const body = request.body;
  if (body === null || typeof body !== 'object') return undefined;
  const v = (body as Record<string, unknown>)[name];
  const s = Array.isArray(v) ? v[0] : v;
  return typeof s === 'string' ? s : typeof s === 'boolean' ? String(s) : undefined;
}

function parseEnabled(raw: string | undefined): boolean {
  const v = raw?.trim().toLowerCase();
  if (v === 'true' || v === 'on' || v === '1') return true;
  if (v === 'false' || v === 'off' || v === '0') return false;
  throw new HooklineError('invalid_body', 'enabled must be true or false', { field: 'enabled' });
}

export function createProviderRoutes(deps: ProviderRoutesDeps): FastifyPluginAsync {
  const { config, ingestion } = deps;
  const trusted = parseTrustedProxies(config.trustedProxies);
  /** Who decided, for the provider's events: the forward-auth user (from a trusted proxy only). */
  const operatorOf = (request: FastifyRequest): string => {
    const h = config.authUserHeader ? request.headers[config.authUserHeader] : undefined;
    const fromProxy = isTrustedPeer(request.socket.remoteAddress, trusted);
    return fromProxy && typeof h === 'string' && h.trim().length > 0
      ? h.trim().slice(0, 128)
      : config.operator;
  };
  const view = (state: ProviderState, token?: string): ProviderView => {
    const path =
      state.kind === 'generic'
        ? `/webhooks/generic/${state.name.slice('generic:'.length)}`
        : state.kind === 'broker'
          ? null
          : `/webhooks/${state.kind}`;
    return {
      name: state.name,
      kind: state.kind,
      trust_mode: state.trust_mode,
      enabled: state.enabled,
      path,
      ingest_url: path ? `${config.baseUrl}${path}` : null,
      ...(token ? { token } : {}),
    };
  };
  const send = (request: FastifyRequest, reply: FastifyReply, status: number, v: ProviderView) =>
    wantsJson(request)
      ? reply.code(status).send(v)
      : reply.code(status).type('text/html; charset=utf-8').send(renderProviderFragment(v));

  return fp(
    async (app) => {
      await app.register(async (scope) => {
        // These routes answer HTML fragments (and problems) outside the UI plugin: the same headers.
        scope.addHook('onSend', async (_request, reply) => {
          for (const [name, value] of Object.entries(securityHeaders)) reply.header(name, value);
        });
        if (scope.hasContentTypeParser('application/x-www-form-urlencoded')) {
          scope.removeContentTypeParser('application/x-www-form-urlencoded');
        }
        scope.addContentTypeParser(
          'application/x-www-form-urlencoded',
          { parseAs: 'string' },
          (_req, body, done) => {
            done(null, Object.fromEntries(new URLSearchParams(body as string)));
          },
        );

        scope.post('/providers', async (request, reply) => {
          assertSameOrigin(request, config);
          const name = field(request, 'name')?.trim() ?? '';
          if (!GENERIC_NAME_PATTERN.test(name)) {
            throw new HooklineError('invalid_body', 'name must match ^[a-z0-9][a-z0-9_-]{0,63}$', {
              field: 'name',
            });
          }
          const trust = (field(request, 'trust_mode') ?? 'token').trim();
          if (trust !== 'token' && trust !== 'open') {
            throw new HooklineError('invalid_body', 'trust_mode must be token or open', {
              field: 'trust_mode',
            });
          }
          const token = trust === 'token' ? generateToken() : undefined;
          const { state } = await ingestion.directory.execute({
            type: 'CreateGenericProvider',
            name: genericProviderName(name),
            trust_mode: trust,
            token_hash: token ? hashToken(token) : null,
            by: operatorOf(request),
          });
          reply.header('cache-control', 'no-store'); // the token is in this response, once
          return send(request, reply, 201, view(state, token));
        });

        scope.post('/providers/:name/enabled', async (request, reply) => {
          assertSameOrigin(request, config);
          const { name } = request.params as { name: string };
          // An unknown name is 404 whatever the form says (spec 4.8); the decision checks it again.
          if (!(await ingestion.directory.load(name))?.state.exists) {
            throw new HooklineError('not_found', `no provider named ${name}`);
          }
          const enabled = parseEnabled(field(request, 'enabled'));
          const { state } = await ingestion.directory.execute({
            type: 'SetProviderEnabled',
            name,
            enabled,
            by: operatorOf(request),
          });
          return send(request, reply, 200, view(state));
        });
      });
    },
    { name: 'hookline-providers-routes' },
  );
}
