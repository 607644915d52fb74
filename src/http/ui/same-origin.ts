import type { FastifyRequest } from 'fastify';
import { HooklineError } from '../../errors.ts';

/**
 * Refuses cross-site form posts (design.md "Browser safety"), the way Go's
 * http.CrossOriginProtection does: a browser says where a request comes from in Sec-Fetch-Site
 * (every current browser) or Origin; when it says another site, the post is refused with 403.
 * A request with neither header did not come from a browser page, so it cannot be a cross-site
 * forgery, and passes (curl, scripts, tests).
 *
 * `baseUrl` is the configured public address; behind a reverse proxy it is the origin the
 * browser sees, which the Host header may not be.
 */
export function assertSameOrigin(request: FastifyRequest, baseUrl: string): void {
  const site = header(request, 'sec-fetch-site');
  if (site !== undefined) {
    if (site === 'same-origin' || site === 'none') return;
    throw refused(`a ${site} request may not post here`);
  }
  const origin = header(request, 'origin');
  if (origin === undefined) return;
  if (origin !== 'null') {
    if (origin === safeOrigin(baseUrl)) return;
    const host = header(request, 'host');
    if (host !== undefined && safeHost(origin) === host.toLowerCase()) return;
  }
  throw refused('the Origin of this post is not this site');
}

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return typeof v === 'string' ? v : Array.isArray(v) ? v[0] : undefined;
}

function safeOrigin(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

function safeHost(origin: string): string | undefined {
  try {
    return new URL(origin).host.toLowerCase();
  } catch {
    return undefined;
  }
}

const refused = (detail: string) => new HooklineError('cross_site', detail);
