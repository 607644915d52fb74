import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config.ts';
import { GENERIC_NAME_PATTERN, genericProviderName, NAME_RULE } from '../../domain/provider/names.ts';
import type { ProviderState } from '../../domain/provider/state.ts';
import { HooklineError } from '../../errors.ts';
import type { Ingestion } from '../../ingest/index.ts';
import { isTrustedPeer, parseTrustedProxies } from '../../ingest/source-ip.ts';
import { generateToken, hashToken } from '../../ingest/token.ts';
import { registerForms } from '../forms.ts';
import { refuseCrossSite } from '../same-origin.ts';
import { renderFragment } from './fragments.ts';

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
        refuseCrossSite(scope, config);
        await registerForms(scope);

        scope.post('/providers', async (request, reply) => {
          const name = field(request, 'name')?.trim() ?? '';
          if (!GENERIC_NAME_PATTERN.test(name)) {
            throw new HooklineError('invalid_body', `the name must be ${NAME_RULE}`, {
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
