import { createHash } from 'node:crypto';
import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { SIGN_IN_STYLE } from '../auth/pages.ts';

/**
 * The one source of the security headers (CSP and friends): @fastify/helmet, registered once at the
 * root, sets them on every response (screens, fragments, static files, the stream, problems, the
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

export function securityHeadersPlugin(options: { readonly baseUrl: string }) {
  const https = options.baseUrl.startsWith('https:');
  const settings: FastifyHelmetOptions = {
    global: true,
    contentSecurityPolicy: csp(uiDirectives),
    referrerPolicy: { policy: 'same-origin' },
    xFrameOptions: { action: 'deny' },
    crossOriginOpenerPolicy: { policy: 'same-origin' },
    crossOriginResourcePolicy: { policy: 'same-origin' },
    // Only an https base URL is told to stay https (a loopback instance is plain http).
    strictTransportSecurity: https ? { maxAge: 31_536_000 } : false,
  };
  return fp(
    async (app: FastifyInstance) => {
      await app.register(helmet, settings);
    },
    { name: 'hookline-security-headers' },
  );
}
