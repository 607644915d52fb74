import net from 'node:net';
import * as oauth from 'oauth4webapi';
import { type BuildAppOptions, buildApp } from '../../src/app.ts';
import { packageVersion } from '../../src/cli/package.ts';
import type { Clock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config.ts';
import type { Logger } from '../../src/logger.ts';
import type { ReplayClientOptions } from '../../src/replay/index.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { embeddedTarget } from '../support/embedded.ts';
import { TestBrowser } from './browser.ts';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface TestServer {
  readonly url: string;
  readonly runtime: Runtime;
  close(): Promise<void>;
}

/**
 * The app built over a real runtime and listening on a real loopback port, so that OAuth
 * clients, browsers and the API meet real HTTP. Embedded mode (the run's managed PostgreSQL) unless a database URL is given.
 */
export async function startServer(
  options: {
    readonly databaseUrl?: string;
    readonly clock?: Clock;
    readonly env?: Record<string, string>;
    /** The runtime's logger (default: built from the config, silent). */
    readonly logger?: Logger;
    /** The replay client's options (a test's TLS target: its CA, and which address counts as public). */
    readonly replay?: ReplayClientOptions;
    /** What buildApp takes besides the runtime (the friend-request expiry sweep's interval, say). */
    readonly app?: BuildAppOptions;
  } = {},
): Promise<TestServer> {
  const port = await freePort();
  const target = options.databaseUrl ? undefined : await embeddedTarget();
  const config = loadConfig(
    {
      HOOKLINE_HOST: '127.0.0.1',
      HOOKLINE_PORT: String(port),
      HOOKLINE_LOG_LEVEL: 'silent',
      ...target?.env,
      ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
      ...options.env,
    },
    packageVersion(),
  );
  const runtime = await createRuntime(config, {
    ...target?.runtimeOptions,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.replay ? { replay: options.replay } : {}),
  });
  const app = await buildApp(runtime, { requestLogging: false, ...options.app });
  await app.listen({ host: '127.0.0.1', port });
  return {
    url: config.baseUrl,
    runtime,
    close: async () => {
      await app.close();
      await runtime.close();
      await target?.drop();
    },
  };
}

export const CLIENT: oauth.Client = { client_id: 'hookline-cli' };
export const insecure = { [oauth.allowInsecureRequests]: true } as const;

export async function discover(baseUrl: string): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(baseUrl);
  return oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
  );
}

export interface AuthorizationRequest {
  readonly url: string;
  readonly verifier: string;
  readonly state: string;
  readonly redirectUri: string;
}

export async function authorizationRequest(
  as: oauth.AuthorizationServer,
  params: { readonly resource: string; readonly port?: number; readonly scope?: string },
): Promise<AuthorizationRequest> {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const redirectUri = `http://127.0.0.1:${params.port ?? 49152 + Math.floor(Math.random() * 10000)}/callback`;
  const url = new URL(as.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: CLIENT.client_id,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: params.scope ?? 'api',
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    resource: params.resource,
    state,
  }).toString();
  return { url: url.toString(), verifier, state, redirectUri };
}

export function exchangeCode(
  as: oauth.AuthorizationServer,
  req: AuthorizationRequest,
  callback: URL,
  options: { readonly verifier?: string; readonly resource?: string } = {},
): Promise<Response> {
  const params = oauth.validateAuthResponse(as, CLIENT, callback, req.state);
  return oauth.authorizationCodeGrantRequest(
    as,
    CLIENT,
    oauth.None(),
    params,
    req.redirectUri,
    options.verifier ?? req.verifier,
    { ...insecure, ...(options.resource ? { additionalParameters: { resource: options.resource } } : {}) },
  );
}

/** A signed-in operator's token pair, obtained through the whole flow with a browser that clicks Allow. */
export async function signIn(
  baseUrl: string,
  browserHeaders: Record<string, string> = {},
): Promise<oauth.TokenEndpointResponse> {
  const as = await discover(baseUrl);
  const req = await authorizationRequest(as, { resource: `${baseUrl}/api` });
  const callback = await new TestBrowser(browserHeaders).approve(req.url);
  return oauth.processAuthorizationCodeResponse(as, CLIENT, await exchangeCode(as, req, callback));
}

export function refresh(as: oauth.AuthorizationServer, refreshToken: string): Promise<Response> {
  return oauth.refreshTokenGrantRequest(as, CLIENT, oauth.None(), refreshToken, insecure);
}
