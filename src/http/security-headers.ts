import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import helmet, { type HelmetOptions } from 'helmet';
import { SIGN_IN_STYLE } from '../auth/pages.ts';

/**
 * The one source of the security headers (CSP and friends): helmet's middleware, built once per
 * policy and run in one root `onRequest` hook, sets them on every response (screens, fragments, static files, the stream, problems, the
 * API). The screens' policy allows scripts and styles from this origin only: no inline script, no
 * inline style attribute, no eval (htmx runs with allowEval off), nothing from another origin, no
 * framing.
 */
export const uiDirectives: Readonly<Record<string, readonly string[]>> = Object.freeze({
  defaultSrc: ["'none'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'"],
  connectSrc: ["'self'"],
  formAction: ["'self'"],
  baseUri: ["'none'"],
  frameAncestors: ["'none'"],
});

/**
 * The sign-in pages (consent, messages) are self-contained: their one inline stylesheet is allowed
 * by its hash, and they have no `form-action` (approving a sign-in redirects to the client's own
 * loopback callback, which `form-action 'self'` would block).
 */
const signInStyleHash = `'sha256-${createHash('sha256').update(SIGN_IN_STYLE).digest('base64')}'`;
export const signInDirectives: Readonly<Record<string, readonly string[]>> = Object.freeze({
  defaultSrc: ["'none'"],
  styleSrc: [signInStyleHash],
  baseUri: ["'none'"],
  frameAncestors: ["'none'"],
});

const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
/** The header value a set of directives becomes (docs and tests quote it). */
export const policyOf = (directives: Readonly<Record<string, readonly string[]>>): string =>
  Object.entries(directives)
    .map(([name, values]) => `${kebab(name)} ${values.join(' ')}`)
    .join(';');

const csp = (directives: Readonly<Record<string, readonly string[]>>) => ({
  useDefaults: false,
  directives: Object.fromEntries(Object.entries(directives).map(([k, v]) => [k, [...v]])),
});

/** Route option for the sign-in pages: the same headers with the sign-in policy. */
export const signInHelmet = { contentSecurityPolicy: csp(signInDirectives) } as const;

type HeadersMiddleware = ReturnType<typeof helmet>;

/**
 * @fastify/helmet built helmet's middleware (parsing the CSP directives) afresh for every request:
 * about 3% of a webhook delivery's CPU. Here each policy's middleware is built once: the global
 * one, and one per route option object (`config.helmet`, the sign-in pages').
 */
export function securityHeadersPlugin(options: { readonly baseUrl: string }) {
  const https = options.baseUrl.startsWith('https:');
  const settings: HelmetOptions = {
    contentSecurityPolicy: csp(uiDirectives),
    referrerPolicy: { policy: 'same-origin' },
    xFrameOptions: { action: 'deny' },
    crossOriginOpenerPolicy: { policy: 'same-origin' },
    crossOriginResourcePolicy: { policy: 'same-origin' },
    // Only an https base URL is told to stay https (a loopback instance is plain http).
    strictTransportSecurity: https ? { maxAge: 31_536_000 } : false,
  };
  const global = helmet(settings);
  const perRoute = new WeakMap<object, HeadersMiddleware>();
  const middlewareOf = (request: FastifyRequest): HeadersMiddleware => {
    const own = (request.routeOptions.config as { helmet?: HelmetOptions } | undefined)?.helmet;
    if (own === undefined) return global;
    let m = perRoute.get(own);
    if (!m) {
      m = helmet({ ...settings, ...own } as HelmetOptions);
      perRoute.set(own, m);
    }
    return m;
  };
  return fp(
    async (app: FastifyInstance) => {
      app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
        middlewareOf(request)(request.raw, reply.raw, (err?: unknown) => {
          if (err) throw err;
        });
        done();
      });
    },
    { name: 'hookline-security-headers' },
  );
}
