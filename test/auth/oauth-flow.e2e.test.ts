import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCESS_TOKEN_TTL_S } from '../../src/auth/oauth-settings.ts';
import { fixedClock } from '../../src/clock.ts';
import { TestBrowser } from './browser.ts';
import {
  authorizationRequest,
  CLIENT,
  discover,
  exchangeCode,
  refresh,
  signIn,
  startServer,
  type TestServer,
} from './server.ts';

const clock = fixedClock(new Date());
let server: TestServer;
let as: oauth.AuthorizationServer;
let resource: string;

beforeAll(async () => {
  server = await startServer({ clock });
  as = await discover(server.url);
  resource = `${server.url}/api`;
});
afterAll(async () => {
  await server?.close();
});

const me = (token: string) =>
  fetch(`${server.url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });

async function oauthError(response: Response): Promise<{ status: number; error: string }> {
  const status = response.status;
  const body = (await response.json()) as { error: string };
  return { status, error: body.error };
}

async function approvedCode() {
  const req = await authorizationRequest(as, { resource });
  const callback = await new TestBrowser().approve(req.url);
  return { req, callback };
}

describe('the operators’ authorization server', () => {
  it('publishes RFC 8414 metadata: code flow with S256 only, a public client, revocation', async () => {
    const res = await fetch(`${server.url}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    const meta = (await res.json()) as Record<string, unknown>;
    expect(meta).toMatchObject({
      issuer: server.url,
      authorization_endpoint: `${server.url}/oauth/authorize`,
      token_endpoint: `${server.url}/oauth/token`,
      revocation_endpoint: `${server.url}/oauth/revoke`,
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      authorization_response_iss_parameter_supported: true,
    });
    expect(meta.grant_types_supported).toEqual(
      expect.arrayContaining(['authorization_code', 'refresh_token']),
    );
  });

  it('signs the local operator in through the consent page and issues an opaque, short-lived token for the API', async () => {
    const { req, callback } = await approvedCode();
    expect(callback.searchParams.get('iss')).toBe(server.url);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      CLIENT,
      await exchangeCode(as, req, callback),
    );
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.expires_in).toBe(ACCESS_TOKEN_TTL_S);
    expect(tokens.scope).toBe('api');
    expect(tokens.refresh_token).toBeTypeOf('string');
    expect(tokens.access_token.split('.')).toHaveLength(1); // opaque, not a JWT
    const res = await me(tokens.access_token);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ operator: 'admin', client_id: 'hookline-cli' });
  });

  it('refuses a code used twice, and revokes what the first use issued', async () => {
    const { req, callback } = await approvedCode();
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      CLIENT,
      await exchangeCode(as, req, callback),
    );
    expect((await me(tokens.access_token)).status).toBe(200);
    expect(await oauthError(await exchangeCode(as, req, callback))).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
    expect((await me(tokens.access_token)).status).toBe(401);
  });

  it('refuses a wrong PKCE verifier', async () => {
    const { req, callback } = await approvedCode();
    const wrong = oauth.generateRandomCodeVerifier();
    expect(await oauthError(await exchangeCode(as, req, callback, { verifier: wrong }))).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
  });

  it('refuses an authorization request without PKCE', async () => {
    const req = await authorizationRequest(as, { resource });
    const url = new URL(req.url);
    url.searchParams.delete('code_challenge');
    url.searchParams.delete('code_challenge_method');
    const consent = await new TestBrowser().openConsent(url.toString());
    const back = new URL(consent.url);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('never redirects to anything but a loopback /callback of the CLI client (RFC 8252)', async () => {
    for (const redirectUri of [
      'http://evil.example/callback',
      'http://localhost:4000/callback',
      'http://127.0.0.1:4000/elsewhere',
      'https://127.0.0.1:4000/callback',
    ]) {
      const req = await authorizationRequest(as, { resource });
      const url = new URL(req.url);
      url.searchParams.set('redirect_uri', redirectUri);
      const res = await new TestBrowser().get(url.toString());
      expect(res.status, redirectUri).toBe(400);
      expect(res.location).toBeUndefined();
      expect(res.type).toMatch(/^text\/html/);
      expect(res.body).toContain('redirect_uri');
    }
    const req = await authorizationRequest(as, { resource, port: 4000 });
    const url = new URL(req.url);
    url.searchParams.set('client_id', 'someone-else');
    const unknown = await new TestBrowser().get(url.toString());
    expect(unknown.status).toBe(400);
    expect(unknown.body).toContain('invalid_client');
  });

  it('refuses an unknown resource at the authorization endpoint and at the token endpoint', async () => {
    const req = await authorizationRequest(as, { resource: 'https://elsewhere.example/api' });
    const consent = await new TestBrowser().openConsent(req.url);
    const back = new URL(consent.url);
    expect(back.searchParams.get('error')).toBe('invalid_target');
    expect(back.searchParams.get('code')).toBeNull();

    const { req: good, callback } = await approvedCode();
    expect(
      await oauthError(await exchangeCode(as, good, callback, { resource: 'https://elsewhere.example/api' })),
    ).toEqual({ status: 400, error: 'invalid_target' });
  });

  it('rotates refresh tokens: each refresh answers a new pair, and the new access token works', async () => {
    const first = await signIn(server.url);
    const second = await oauth.processRefreshTokenResponse(
      as,
      CLIENT,
      await refresh(as, first.refresh_token!),
    );
    expect(second.refresh_token).toBeTypeOf('string');
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.access_token).not.toBe(first.access_token);
    expect((await me(second.access_token)).status).toBe(200);
  });

  it('revokes the whole grant when a rotated refresh token is used again', async () => {
    const first = await signIn(server.url);
    const second = await oauth.processRefreshTokenResponse(
      as,
      CLIENT,
      await refresh(as, first.refresh_token!),
    );
    expect(await oauthError(await refresh(as, first.refresh_token!))).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
    // The newest pair, issued before the reuse, dies with the grant.
    expect(await oauthError(await refresh(as, second.refresh_token!))).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
    expect((await me(second.access_token)).status).toBe(401);
  });

  it('revocation of the refresh token (logout) ends the sign-in', async () => {
    const tokens = await signIn(server.url);
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, CLIENT, oauth.None(), tokens.refresh_token!, {
        [oauth.allowInsecureRequests]: true,
      }),
    );
    expect(await oauthError(await refresh(as, tokens.refresh_token!))).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
    expect((await me(tokens.access_token)).status).toBe(401);
  });

  it('answers 401 with a problem document for a missing, malformed, unknown or endpoint bearer', async () => {
    const tokens = await signIn(server.url);
    const vend = await fetch(`${server.url}/api/v1/endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'oauth-test-agent' }),
    });
    expect(vend.status).toBe(201);
    const endpointToken = ((await vend.json()) as { token: string }).token;
    expect(endpointToken.startsWith('hlk_')).toBe(true);

    for (const authorization of [
      undefined,
      'Basic YWRtaW46YWRtaW4=',
      'Bearer not-a-token',
      `Bearer ${endpointToken}`,
    ]) {
      const res = await fetch(`${server.url}/api/v1/agents`, {
        headers: authorization ? { authorization } : {},
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="hookline"/);
      const problem = (await res.json()) as Record<string, unknown>;
      expect(problem).toMatchObject({ status: 401, title: 'Unauthorized', code: 'unauthorized' });
      expect(problem.detail).toBeTypeOf('string');
    }
  });

  it('refuses a consent posted cross-site, and a declined consent returns access_denied', async () => {
    const req = await authorizationRequest(as, { resource });
    const browser = new TestBrowser();
    const consent = await browser.openConsent(req.url);
    expect(consent.status).toBe(200);
    expect(consent.html).toContain('admin');
    // The one policy of every form (src/http/same-origin.ts): each of these is refused.
    const refusals: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
      { origin: 'null' }, // without Sec-Fetch-Site: same-origin beside it
      { origin: 'null', 'sec-fetch-site': 'cross-site' },
      { origin: 'null', 'sec-fetch-site': 'none' }, // only same-origin vouches for Origin: null
      { origin: server.url, 'sec-fetch-site': 'same-site' },
      {}, // neither header, from a page that asks for HTML
    ];
    for (const headers of refusals) {
      const refused = await browser.decide(consent, 'allow', headers);
      expect(refused.status, JSON.stringify(headers)).toBe(403);
      expect(refused.body).toContain('Cross-site request refused');
      expect(refused.callback).toBeUndefined();
    }

    const declined = await browser.decide(consent, 'deny');
    expect(declined.callback?.searchParams.get('error')).toBe('access_denied');
    expect(declined.callback?.searchParams.get('code')).toBeNull();
  });

  it('an access token past its lifetime is refused with 401 (clock injected into the runtime)', async () => {
    const tokens = await signIn(server.url);
    expect((await me(tokens.access_token)).status).toBe(200);
    // The token's lifetime counts from its issue; move the runtime's clock to its end.
    clock.set(new Date(Date.now() + ACCESS_TOKEN_TTL_S * 1000));
    try {
      const res = await me(tokens.access_token);
      expect(res.status).toBe(401);
      expect(((await res.json()) as { detail: string }).detail).toMatch(/expired/);
    } finally {
      clock.set(new Date());
    }
  });
});

describe('sign-in behind a forward-auth proxy', () => {
  let proxied: TestServer;
  beforeAll(async () => {
    proxied = await startServer({
      env: { HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1', HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User' },
    });
  });
  afterAll(async () => {
    await proxied?.close();
  });

  it('signs in the user the trusted proxy names', async () => {
    const pas = await discover(proxied.url);
    const req = await authorizationRequest(pas, { resource: `${proxied.url}/api` });
    const browser = new TestBrowser({ 'x-forwarded-user': 'alice@example.com' });
    const consent = await browser.openConsent(req.url);
    expect(consent.html).toContain('alice@example.com');
    const { callback } = await browser.decide(consent, 'allow');
    const tokens = await oauth.processAuthorizationCodeResponse(
      pas,
      CLIENT,
      await exchangeCode(pas, req, callback!),
    );
    const res = await fetch(`${proxied.url}/api/v1/me`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(await res.json()).toMatchObject({ operator: 'alice@example.com' });
  });

  it('refuses the sign-in when the proxy names nobody', async () => {
    const pas = await discover(proxied.url);
    const req = await authorizationRequest(pas, { resource: `${proxied.url}/api` });
    const consent = await new TestBrowser().openConsent(req.url);
    const back = new URL(consent.url);
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('error_description')).toMatch(/x-forwarded-user/);
  });
});
