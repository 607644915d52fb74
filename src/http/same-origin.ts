import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { HooklineError } from '../errors.ts';

/** Methods that change nothing: never checked. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The Host names that only this machine can answer for: a DNS-rebinding page never has one. */
function isLoopbackHost(host: string): boolean {
  let name: string;
  try {
    name = new URL(`http://${host}`).hostname;
  } catch {
    return false;
  }
  return name === 'localhost' || name === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

/** A request that asks for JSON and not HTML: the CLI and scripts, never a browser's form post. */
const wantsJsonOnly = (accept: string | undefined): boolean =>
  /\bapplication\/json\b/i.test(accept ?? '') && !/\btext\/html\b/i.test(accept ?? '');

/**
 * Browser safety (design.md; README "Screens", Browser safety): the one same-origin policy of every
 * state-changing form (sign-in consent, providers, settings, quarantine), decided on what browsers
 * really send.
 * 1. `Sec-Fetch-Site`, which browsers send to https and loopback origins, decides when present:
 *    `same-origin` passes, whatever `Origin` says beside it: a page whose Referrer-Policy is
 *    `no-referrer` makes its own form posts carry `Origin: null`, and `Sec-Fetch-Site: same-origin`
 *    is what vouches for them. `none` (the person's own action: a bookmark, a reload) passes unless
 *    an `Origin` beside it says otherwise (`null`, or a real origin that is not ours, rule 2).
 *    `same-site` and `cross-site` are refused. A DNS-rebinding page never gets `same-origin` here:
 *    over http its browser sends no Sec-Fetch-Site, and over https our server has no certificate
 *    for the attacker's name.
 * 2. Else `Origin`, when it is a real origin, must be the origin of HOOKLINE_BASE_URL. The request's
 *    own Host stands in for it only when that Host is a loopback name (localhost, 127.x, [::1]), so
 *    `http://127.0.0.1:<port>` works without a base URL: a DNS-rebinding page is served under its
 *    own host name, which its Host and Origin then carry, and that is never loopback.
 * 3. `Origin: null` without `Sec-Fetch-Site: same-origin` (a sandboxed frame, a cross-site redirect,
 *    a `data:` page): refused, since nothing says where it came from.
 * 4. Neither header: no browser sends such a POST. A client asking for JSON only (the CLI, a
 *    script) passes; one asking for HTML is a form post from an old or odd browser and is refused.
 */
export function isSameOriginRequest(headers: IncomingHttpHeaders, baseUrl: string): boolean {
  const site = one(headers['sec-fetch-site']);
  const origin = one(headers.origin);
  if (site === 'same-origin') return true;
  if (site !== undefined && site !== 'none') return false;
  if (origin === undefined) return site === 'none' || wantsJsonOnly(one(headers.accept));
  return isOurOrigin(origin, headers, baseUrl);
}

/** A real origin that is HOOKLINE_BASE_URL's, or a loopback Host's own (rule 2); `null` never is. */
function isOurOrigin(origin: string, headers: IncomingHttpHeaders, baseUrl: string): boolean {
  if (origin === 'null') return false;
  if (origin === new URL(baseUrl).origin) return true;
  const host = one(headers.host);
  if (host && isLoopbackHost(host)) {
    const own = ['http', 'https'].map((scheme) => new URL(`${scheme}://${host}`).origin);
    return own.includes(origin);
  }
  return false;
}

/** Throws the `cross_site` problem (403) unless the request passes the policy above. */
export function assertSameOrigin(request: FastifyRequest, config: Pick<Config, 'baseUrl'>): void {
  if (!SAFE_METHODS.has(request.method) && !isSameOriginRequest(request.headers, config.baseUrl)) {
    throw new HooklineError('cross_site', 'cross-site form posts are refused');
  }
}

/**
 * Registers the policy once on a scope (style.md §16): every request of the scope that may change
 * something is checked before its body is read.
 */
export function refuseCrossSite(scope: FastifyInstance, config: Pick<Config, 'baseUrl'>): void {
  scope.addHook('onRequest', async (request) => assertSameOrigin(request, config));
}
