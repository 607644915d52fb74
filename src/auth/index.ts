import type Provider from 'oidc-provider';
import type { Runtime } from '../runtime.ts';
import { createBearerVerifier, type OperatorPrincipal } from './bearer.ts';
import { createIdentityResolver, type SignedIn } from './identity.ts';
import { apiResource, createOAuthProvider } from './oauth-provider.ts';

/** The operators' authorization server and what the operator API needs of it. */
export interface OperatorAuth {
  readonly provider: Provider;
  readonly resource: string;
  readonly identify: (req: import('node:http').IncomingMessage) => SignedIn;
  readonly verifyBearer: (authorization: string | undefined) => Promise<OperatorPrincipal>;
}

export function createOperatorAuth(runtime: Pick<Runtime, 'config' | 'db' | 'clock'>): OperatorAuth {
  const provider = createOAuthProvider({ config: runtime.config, db: runtime.db });
  const resource = apiResource(runtime.config.baseUrl);
  return {
    provider,
    resource,
    identify: createIdentityResolver(runtime.config),
    verifyBearer: createBearerVerifier({ provider, clock: runtime.clock, resource }),
  };
}

export type { OperatorPrincipal } from './bearer.ts';
