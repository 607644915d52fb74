import { request } from 'undici';

/**
 * An HTTP-level stand-in for a browser in a sign-in, for misuse tests and for tests that only need a
 * token to start from (the sign-in a person does is test/auth/browser-sign-in.e2e.test.ts, in
 * Chromium). Follows the authorization URL to the consent page, submits its form with the headers
 * given (by default what Chromium sends from that page: `Sec-Fetch-Site: same-origin` and the
 * page's `Origin`) and the cookies it was given, and follows the redirects until one leaves for
 * the client's loopback redirect URI, which it returns unvisited.
 */
export class TestBrowser {
  private readonly jar = new Map<string, string>();

  private readonly headers: Record<string, string>;

  /** `headers` go with every request (a forward-auth proxy's user header, say). */
  constructor(headers: Record<string, string> = {}) {
    this.headers = headers;
  }

  private cookieHeader(): string | undefined {
    if (this.jar.size === 0) return undefined;
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private keep(setCookie: string | string[] | undefined): void {
    for (const line of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
      const [pair] = line.split(';');
      const eq = pair?.indexOf('=') ?? -1;
      if (!pair || eq < 1) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.jar.delete(name);
      else this.jar.set(name, value);
    }
  }

  async get(url: string, headers: Record<string, string> = {}) {
    const cookie = this.cookieHeader();
    const res = await request(url, {
      method: 'GET',
      headers: { ...this.headers, ...headers, ...(cookie ? { cookie } : {}) },
    });
    this.keep(res.headers['set-cookie']);
    const body = await res.body.text();
    return {
      status: res.statusCode,
      location: header(res.headers.location),
      body,
      type: header(res.headers['content-type']),
    };
  }

  async postForm(url: string, form: Record<string, string>, headers: Record<string, string> = {}) {
    const cookie = this.cookieHeader();
    const res = await request(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...this.headers,
        ...headers,
        ...(cookie ? { cookie } : {}),
      },
      body: new URLSearchParams(form).toString(),
    });
    this.keep(res.headers['set-cookie']);
    const body = await res.body.text();
    return { status: res.statusCode, location: header(res.headers.location), body };
  }

  /** GET the authorization URL and follow redirects to the consent page; returns its HTML and URL. */
  async openConsent(authorizationUrl: string): Promise<{ url: string; html: string; status: number }> {
    let url = authorizationUrl;
    for (let hop = 0; hop < 5; hop++) {
      const res = await this.get(url);
      if (res.status >= 300 && res.status < 400 && res.location) {
        const next = new URL(res.location, url).toString();
        if (isLoopbackCallback(next)) return { url: next, html: '', status: res.status };
        url = next;
        continue;
      }
      return { url, html: res.body, status: res.status };
    }
    throw new Error('too many redirects before the consent page');
  }

  /**
   * Submits the consent page's form (`allow` or `deny`) with the given request headers (default:
   * what Chromium sends) and follows the redirects; returns the loopback callback URL the browser
   * would load next.
   */
  async decide(
    consent: { url: string; html: string },
    decision: 'allow' | 'deny',
    headers: Record<string, string> = {
      origin: new URL(consent.url).origin,
      'sec-fetch-site': 'same-origin',
    },
  ): Promise<{ callback: URL | undefined; status: number; body: string }> {
    const action = formAction(consent.html, decision === 'allow' ? 'confirm' : 'abort');
    const target = new URL(action, consent.url).toString();
    const posted = await this.postForm(target, { decision }, headers);
    if (!(posted.status >= 300 && posted.status < 400 && posted.location)) {
      return { callback: undefined, status: posted.status, body: posted.body };
    }
    let url = new URL(posted.location, target).toString();
    for (let hop = 0; hop < 5; hop++) {
      if (isLoopbackCallback(url)) return { callback: new URL(url), status: 303, body: '' };
      const res = await this.get(url);
      if (!(res.status >= 300 && res.status < 400 && res.location)) {
        return { callback: undefined, status: res.status, body: res.body };
      }
      url = new URL(res.location, url).toString();
    }
    throw new Error('too many redirects after the consent');
  }

  /** The whole sign-in, Allow pressed: a token pair for tests about what comes after it. */
  async approve(authorizationUrl: string): Promise<URL> {
    const consent = await this.openConsent(authorizationUrl);
    if (isLoopbackCallback(consent.url)) return new URL(consent.url);
    if (consent.status !== 200)
      throw new Error(`consent page answered ${consent.status}: ${consent.html.slice(0, 300)}`);
    const { callback, status, body } = await this.decide(consent, 'allow');
    if (!callback) throw new Error(`sign-in did not return to the client (${status}): ${body.slice(0, 300)}`);
    return callback;
  }
}

const header = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

const isLoopbackCallback = (url: string): boolean =>
  /^http:\/\/(127\.0\.0\.1|\[::1\]):\d+\/callback/.test(url);

function formAction(html: string, suffix: 'confirm' | 'abort'): string {
  const actions = [...html.matchAll(/<form[^>]*action="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
  const action = actions.find((a) => a.endsWith(`/${suffix}`));
  if (!action) throw new Error(`no ${suffix} form on the consent page`);
  return action;
}
