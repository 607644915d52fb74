import type Provider from 'oidc-provider';
import type { Clock } from '../clock.ts';
import { HooklineError } from '../errors.ts';
import { isEndpointToken } from './credentials.ts';

/** The signed-in human an operator API request acts for (spec 5 rule 5: bound to the human). */
export interface OperatorPrincipal {
  /** Owner of agents and endpoints: the human's account id. */
  readonly operator: string;
  readonly human: string;
  readonly clientId: string;
  readonly grantId: string;
  readonly scope: string;
}

const BEARER = /^Bearer[ \t]+([A-Za-z0-9\-._~+/]+=*)[ \t]*$/i;

const unauthorized = (detail: string): HooklineError => new HooklineError('unauthorized', detail);

/**
 * Checks an operator API bearer: an opaque access token of our authorization server, issued for
 * the API's resource (its audience), not expired by the injected clock either, whose grant still
 * exists (a reused refresh token deletes the grant and every token of it). Endpoint credentials
 * are refused before any lookup. Every failure is the same 401 with a detail saying what to do.
 */
export function createBearerVerifier(deps: {
  readonly provider: () => Promise<Provider>;
  readonly clock: Clock;
  readonly resource: string;
}): (authorization: string | undefined) => Promise<OperatorPrincipal> {
  const { provider, clock, resource } = deps;
  return async (authorization) => {
    if (!authorization)
      throw unauthorized('an operator bearer token is required; sign in with `hookline login`');
    const match = BEARER.exec(authorization);
    const token = match?.[1];
    if (!token) throw unauthorized('the Authorization header must be `Bearer <access token>`');
    if (isEndpointToken(token)) {
      throw unauthorized(
        'endpoint credentials authenticate only their MCP endpoint, never the operator API; sign in with `hookline login`',
      );
    }
    const { AccessToken, Grant } = await provider();
    const at = await AccessToken.find(token).catch(() => undefined);
    const expired =
      'the access token is unknown, expired or revoked; refresh it or sign in again with `hookline login`';
    if (!at || at.isExpired) throw unauthorized(expired);
    if (typeof at.exp === 'number' && at.exp * 1000 <= clock.now().getTime()) throw unauthorized(expired);
    const audiences = Array.isArray(at.aud) ? at.aud : [at.aud];
    if (!audiences.includes(resource)) throw unauthorized(`the access token was not issued for ${resource}`);
    if (!at.accountId || !at.grantId) throw unauthorized(expired);
    const grant = await Grant.find(at.grantId).catch(() => undefined);
    if (!grant || grant.accountId !== at.accountId) throw unauthorized(expired);
    return {
      operator: at.accountId,
      human: at.accountId,
      clientId: at.clientId ?? '',
      grantId: at.grantId,
      scope: at.scope ?? '',
    };
  };
}
