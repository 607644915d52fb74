import type Provider from 'oidc-provider';
import type { Runtime } from '../runtime.ts';
import { createBearerVerifier, type OperatorPrincipal } from './bearer.ts';
import { createIdentityResolver, type SignedIn } from './identity.ts';
import { apiResource } from './oauth-settings.ts';

/** The operators' authorization server and what the operator API needs of it. */
export interface OperatorAuth {
  /** The authorization server, built on first use (oidc-provider is loaded only then). */
  readonly provider: () => Promise<Provider>;
  readonly resource: string;
  readonly identify: (req: import('node:http').IncomingMessage) => SignedIn;
  readonly verifyBearer: (authorization: string | undefined) => Promise<OperatorPrincipal>;
}

export function createOperatorAuth(runtime: Pick<Runtime, 'config' | 'db' | 'clock'>): OperatorAuth {
  let built: Promise<Provider> | undefined;
  const provider = () => {
    built ??= import('./oauth-provider.ts')
      .then(({ createOAuthProvider }) => createOAuthProvider({ config: runtime.config, db: runtime.db }))
      .catch((err: unknown) => {
        built = undefined; // the next request tries again
        throw err;
      });
    return built;
  };
  const resource = apiResource(runtime.config.baseUrl);
  return {
    provider,
    resource,
    identify: createIdentityResolver(runtime.config),
    verifyBearer: createBearerVerifier({ provider, clock: runtime.clock, resource }),
  };
}

export type { OperatorPrincipal } from './bearer.ts';
