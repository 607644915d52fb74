import { createHmac, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import Provider, { type Configuration, errors, type KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import { createOAuthAdapterFactory } from './oauth-adapter.ts';
import {
  ACCESS_TOKEN_TTL_S,
  API_SCOPE,
  apiResource,
  basePathOf,
  CLI_CLIENT_ID,
  GRANT_TTL_S,
  OAUTH_ROUTES,
  REFRESH_TOKEN_TTL_S,
} from './oauth-settings.ts';
import { renderOAuthError } from './pages.ts';

/**
 * Cookie signing keys. Derived from HOOKLINE_SECRET_KEY when set, so sign-ins in progress survive
 * a restart and instances agree; otherwise random per process (a restart only interrupts a
 * sign-in that was on its consent page).
 */
function cookieKeys(config: Config): string[] {
  if (config.secretKey) {
    return [createHmac('sha256', config.secretKey).update('hookline oauth cookies v1').digest('base64url')];
  }
  return [randomBytes(32).toString('base64url')];
}

/**
 * oidc-provider insists on a signing key. No ID token or JWT is ever issued here (access tokens
 * are opaque and `openid` is never granted), so an ephemeral key per process is enough.
 */
function ephemeralSigningKey() {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    ...privateKey.export({ format: 'jwk' }),
    alg: 'ES256',
    use: 'sig',
    kid: randomBytes(8).toString('hex'),
  };
}

/**
 * The operators' authorization server (spec 5 rule 5, issue: OAuth sign-in). oidc-provider is an
 * OpenID-certified implementation that already does what this needs: PKCE S256, RFC 8252 loopback
 * redirects on any port, RFC 8707 resource indicators, opaque tokens, rotating refresh tokens with
 * reuse detection (a consumed refresh token or code revokes its grant), RFC 9207 `iss`, RFC 8414
 * metadata and RFC 6749 error responses. Everything not needed is switched off.
 */
export function createOAuthProvider(deps: {
  readonly config: Config;
  readonly db: Kysely<Database>;
}): Provider {
  const { config } = deps;
  const resource = apiResource(config.baseUrl);
  const basePath = basePathOf(config.baseUrl);

  const configuration: Configuration = {
    adapter: createOAuthAdapterFactory(deps.db),
    clients: [
      {
        client_id: CLI_CLIENT_ID,
        client_name: 'hookline command-line client',
        application_type: 'native',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback', 'http://[::1]/callback'],
        id_token_signed_response_alg: 'ES256',
      },
    ],
    clientAuthMethods: ['none'],
    responseTypes: ['code'],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      dPoP: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      userinfo: { enabled: false },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== resource) {
            throw new errors.InvalidTarget(`unknown resource; this server's API is ${resource}`);
          }
          return {
            scope: API_SCOPE,
            audience: resource,
            accessTokenFormat: 'opaque',
            accessTokenTTL: ACCESS_TOKEN_TTL_S,
          };
        },
      },
    },
    enabledJWA: { idTokenSigningAlgValues: ['ES256'] },
    jwks: { keys: [ephemeralSigningKey()] },
    routes: {
      authorization: OAUTH_ROUTES.authorization,
      token: OAUTH_ROUTES.token,
      revocation: OAUTH_ROUTES.revocation,
      jwks: OAUTH_ROUTES.jwks,
    },
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_S,
      AuthorizationCode: 60,
      RefreshToken: REFRESH_TOKEN_TTL_S,
      Grant: GRANT_TTL_S,
      Interaction: 10 * 60,
      Session: 60 * 60,
      IdToken: ACCESS_TOKEN_TTL_S,
    },
    rotateRefreshToken: true,
    // Refresh tokens without `offline_access`: the CLI is the only client and keeps its pair.
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // Tokens outlive the browser session that approved them.
    expiresWithSession: () => false,
    interactions: { url: (_ctx, interaction) => `${basePath}${OAUTH_ROUTES.interaction}/${interaction.uid}` },
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    cookies: {
      keys: cookieKeys(config),
      names: {
        session: 'hookline_oauth_session',
        interaction: 'hookline_oauth_interaction',
        resume: 'hookline_oauth_resume',
      },
      long: { signed: true, httpOnly: true, sameSite: 'lax' },
      short: { signed: true, httpOnly: true, sameSite: 'lax' },
    },
    // No browser client exists: refuse cross-origin use of the token endpoint.
    clientBasedCORS: () => false,
    renderError: (ctx: KoaContextWithOIDC, out) => {
      ctx.type = 'html';
      ctx.body = renderOAuthError(out);
    },
  };

  const provider = new Provider(config.baseUrl, configuration);
  // The mount (src/auth/plugin.ts) sets X-Forwarded-Proto/Host from the configured base URL on
  // every request it hands over, so issued URLs always name the public address.
  provider.proxy = true;
  return provider;
}
