/**
 * The operators' authorization server: its client, scope, lifetimes and paths. Apart from
 * oauth-provider.ts, which builds the server with oidc-provider, so that what only names these
 * (the API plugin, the OpenAPI document, the routes) does not load oidc-provider: it is loaded on
 * the first OAuth request or bearer check (about 40 MB a process that never signs anyone in
 * does not hold).
 */

/** The command-line client: public (no secret), loopback redirect on any port (RFC 8252 §7.3). */
export const CLI_CLIENT_ID = 'hookline-cli';
/** The one scope of the operator API; the CLI asks for it. */
export const API_SCOPE = 'api';
/** Access tokens are short-lived; the CLI refreshes on a 401. */
export const ACCESS_TOKEN_TTL_S = 10 * 60;
/** A refresh token lives 30 days, each rotation issuing a fresh one; the sign-in (grant) caps it at 30 days. */
export const REFRESH_TOKEN_TTL_S = 30 * 24 * 60 * 60;
export const GRANT_TTL_S = 30 * 24 * 60 * 60;

/** Paths of the authorization server, relative to the base URL (documented in docs/reference/api.md). */
export const OAUTH_ROUTES = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  interaction: '/oauth/interaction',
  metadata: '/.well-known/oauth-authorization-server',
} as const;

/** The resource indicator of the operator API; it becomes the access token's audience. */
export const apiResource = (baseUrl: string): string => `${baseUrl}/api`;

/** The base URL's path, for deployments served under a prefix by their reverse proxy. */
export const basePathOf = (baseUrl: string): string => new URL(baseUrl).pathname.replace(/\/+$/, '');
