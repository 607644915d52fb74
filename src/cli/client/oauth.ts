import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oauth from 'oauth4webapi';
import { credentialKey, type StoredCredentials } from './credentials.ts';

// As in src/http/errors-plugin.ts: node:http without an ES import, which would load undici.
const { createServer } = process.getBuiltinModule('node:http');

export const CLI_CLIENT_ID = 'hookline-cli';
const client: oauth.Client = { client_id: CLI_CLIENT_ID };
const auth = oauth.None();

/** Plain http is allowed for loopback servers and any server the operator names explicitly. */
const transport = (issuer: URL) =>
  issuer.protocol === 'http:' ? { [oauth.allowInsecureRequests]: true as const } : {};

export class LoginError extends Error {
  override readonly name = 'LoginError';
}

/** The authorization server's metadata (RFC 8414), checked to be the server's own. */
export async function discover(server: string, followAlias = true): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(server);
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...transport(issuer) });
  try {
    return await oauth.processDiscoveryResponse(issuer, response);
  } catch (err) {
    const claimed = await response
      .clone()
      .json()
      .then((m: { issuer?: string }) => m.issuer)
      .catch(() => undefined);
    if (claimed && claimed !== issuer.href.replace(/\/$/, '')) {
      // The same server under another loopback name (localhost for 127.0.0.1): its own issuer.
      if (followAlias && credentialKey(claimed) === credentialKey(server)) return discover(claimed, false);
      throw new LoginError(
        `the server at ${server} calls itself ${claimed}; run the command with --url ${claimed}`,
      );
    }
    throw new LoginError(`${server} does not serve hookline's sign-in metadata (${(err as Error).message})`);
  }
}

interface Callback {
  readonly redirectUri: string;
  readonly received: Promise<URL>;
  close(): Promise<void>;
}

const page = (title: string, text: string) =>
  `<!doctype html><meta charset="utf-8"><title>${title}</title><body style="font-family:system-ui;margin:3rem"><h1>${title}</h1><p>${text}</p></body>`;

/** The loopback redirect target (RFC 8252 §7.3): 127.0.0.1 on a port of the system's choosing. */
async function listenForCallback(port: number): Promise<Callback> {
  let deliver: (url: URL) => void = () => {};
  const received = new Promise<URL>((resolve) => {
    deliver = resolve;
  });
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', `http://127.0.0.1`);
    if (url.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    const ok = url.searchParams.has('code');
    res.writeHead(ok ? 200 : 400, { 'content-type': 'text/html; charset=utf-8', connection: 'close' });
    res.end(
      ok
        ? page('Signed in', 'You can close this tab and return to the terminal.')
        : page('Sign-in failed', 'Return to the terminal for details.'),
    );
    deliver(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}${req.url}`));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    redirectUri: `http://127.0.0.1:${bound}/callback`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface LoginOptions {
  readonly port: number;
  readonly timeoutMs: number;
  /** Shows the URL to the person (and opens it in a browser when they asked for that). */
  readonly present: (authorizationUrl: string) => Promise<void>;
}

/** Authorization code + PKCE S256 through the browser, then the code exchanged for the token pair. */
export async function login(
  server: string,
  options: LoginOptions,
): Promise<Omit<StoredCredentials, 'operator' | 'saved_at'>> {
  const as = await discover(server);
  if (!as.authorization_endpoint || !as.token_endpoint) {
    throw new LoginError(`${server} advertises no authorization or token endpoint`);
  }
  const resource = `${as.issuer}/api`;
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const callback = await listenForCallback(options.port);
  try {
    const url = new URL(as.authorization_endpoint);
    url.search = new URLSearchParams({
      client_id: CLI_CLIENT_ID,
      response_type: 'code',
      redirect_uri: callback.redirectUri,
      scope: 'api',
      resource,
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    await options.present(url.toString());

    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new LoginError('no sign-in arrived in time; run `hookline login` again')),
        options.timeoutMs,
      );
      timer.unref();
    });
    const returned = await Promise.race([callback.received, timedOut]).finally(() => clearTimeout(timer));

    let params: URLSearchParams;
    try {
      params = oauth.validateAuthResponse(as, client, returned, state);
    } catch (err) {
      if (err instanceof oauth.AuthorizationResponseError) {
        throw new LoginError(
          `sign-in refused: ${err.error}${err.error_description ? ` (${err.error_description})` : ''}`,
        );
      }
      throw err;
    }
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      auth,
      params,
      callback.redirectUri,
      verifier,
      {
        additionalParameters: { resource },
        ...transport(new URL(as.issuer)),
      },
    );
    const tokens = await oauth
      .processAuthorizationCodeResponse(as, client, response)
      .catch((err: unknown) => {
        throw new LoginError(`the code exchange failed: ${describe(err)}`);
      });
    return toCredentials(as, tokens);
  } finally {
    await callback.close();
  }
}

function toCredentials(
  as: oauth.AuthorizationServer,
  tokens: oauth.TokenEndpointResponse,
): Omit<StoredCredentials, 'operator' | 'saved_at'> {
  return {
    issuer: as.issuer,
    token_endpoint: as.token_endpoint!,
    revocation_endpoint: as.revocation_endpoint ?? null,
    client_id: CLI_CLIENT_ID,
    access_token: tokens.access_token,
    refresh_token: tokens.refresh_token ?? null,
    expires_at: Date.now() + (tokens.expires_in ?? 600) * 1000,
  };
}

const asOf = (
  c: Pick<StoredCredentials, 'issuer' | 'token_endpoint' | 'revocation_endpoint'>,
): oauth.AuthorizationServer => ({
  issuer: c.issuer,
  token_endpoint: c.token_endpoint,
  ...(c.revocation_endpoint ? { revocation_endpoint: c.revocation_endpoint } : {}),
});

export class RefreshRefused extends Error {
  override readonly name = 'RefreshRefused';
}

/** Exchanges the refresh token for a new pair; the server rotates it, so the old one is spent. */
export async function refresh(c: StoredCredentials): Promise<StoredCredentials> {
  if (!c.refresh_token) throw new RefreshRefused('no refresh token is stored');
  const as = asOf(c);
  const response = await oauth.refreshTokenGrantRequest(
    as,
    client,
    auth,
    c.refresh_token,
    transport(new URL(c.issuer)),
  );
  try {
    const tokens = await oauth.processRefreshTokenResponse(as, client, response);
    return {
      ...c,
      ...toCredentials(as, tokens),
      refresh_token: tokens.refresh_token ?? c.refresh_token,
      saved_at: new Date().toISOString(),
    };
  } catch (err) {
    if (err instanceof oauth.ResponseBodyError) throw new RefreshRefused(describe(err));
    throw err;
  }
}

/** Revokes the refresh token (and with it the sign-in); best effort. */
export async function revoke(c: StoredCredentials): Promise<boolean> {
  if (!c.revocation_endpoint || !c.refresh_token) return false;
  const as = asOf(c);
  const response = await oauth.revocationRequest(
    as,
    client,
    auth,
    c.refresh_token,
    transport(new URL(c.issuer)),
  );
  await oauth.processRevocationResponse(response);
  return true;
}

function describe(err: unknown): string {
  if (err instanceof oauth.ResponseBodyError)
    return `${err.error}${err.error_description ? ` (${err.error_description})` : ''}`;
  return err instanceof Error ? err.message : String(err);
}
