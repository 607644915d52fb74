import { CliExit } from '../support.ts';
import type { CredentialStore, StoredCredentials } from './credentials.ts';
import { RefreshRefused, refresh } from './oauth.ts';

/** Exit code when the command needs a (new) sign-in: scripts can tell it from other failures. */
export const SIGN_IN_EXIT = 3;

export const signInNeeded = (server: string, why: string): CliExit =>
  new CliExit(`hookline: ${why}; run \`hookline login --url ${server}\``, SIGN_IN_EXIT, 'not_signed_in');

interface Problem {
  readonly title?: string;
  readonly status?: number;
  readonly detail?: string;
  readonly code?: string;
}

/** What to do next, by status: the problem's detail says what went wrong. */
function hint(status: number): string {
  switch (status) {
    case 400:
      return 'fix the input and try again';
    case 403:
      return 'this action is refused from here';
    case 404:
      return 'check the name or slug (`hookline endpoints list`)';
    case 409:
      return 'the endpoint is revoked or expired; vend a new one with `hookline endpoints vend`';
    case 503:
      return 'the server is not ready; try again shortly';
    default:
      return status >= 500 ? 'the server failed; see its log' : '';
  }
}

export function unreachable(server: string, err: unknown): CliExit {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (err as Error).message;
  return new CliExit(
    `hookline: cannot reach the server at ${server} (${why}). Is it running? Start it with \`hookline serve\`, or point the CLI at it with --url or HOOKLINE_URL.`,
    1,
    'unreachable',
  );
}

export interface RequestOptions {
  readonly body?: unknown;
  /** A form body (application/x-www-form-urlencoded) instead of JSON. */
  readonly form?: Record<string, string>;
  /** Send the operator bearer (default true). */
  readonly authenticated?: boolean;
  readonly headers?: Record<string, string>;
  /** What to do next after a 404, where the default (`hookline endpoints list`) does not fit. */
  readonly notFoundHint?: string;
}

/**
 * The operator API as the CLI uses it: JSON in and out, the stored bearer attached, refreshed
 * when it is about to expire or a call answers 401, and failures turned into one line that says
 * what to do next.
 */
export function createApiClient(deps: { readonly server: string; readonly store: CredentialStore }) {
  const { server, store } = deps;

  async function stored(): Promise<StoredCredentials> {
    const c = await store.get(server);
    if (!c) {
      // Not signed in, or a server that is not there (a mistyped --url): say which.
      await fetch(`${server}/healthz`, { signal: AbortSignal.timeout(5000) }).catch((err: unknown) => {
        throw unreachable(server, err);
      });
      throw signInNeeded(server, `not signed in to ${server}`);
    }
    return c;
  }

  /** Refreshes under the store's lock; another process may have refreshed first, so re-read. */
  async function renewed(seen: StoredCredentials): Promise<StoredCredentials> {
    return store.withLock(async () => {
      const latest = await store.get(server);
      if (!latest) throw signInNeeded(server, `not signed in to ${server}`);
      if (latest.access_token !== seen.access_token && latest.expires_at > Date.now() + 30_000) return latest;
      try {
        const next = await refresh(latest);
        await store.put(server, next);
        return next;
      } catch (err) {
        if (err instanceof RefreshRefused) {
          await store.remove(server);
          throw signInNeeded(server, `your sign-in to ${server} has ended (${err.message})`);
        }
        throw unreachable(server, err);
      }
    });
  }

  async function send(method: string, path: string, options: RequestOptions, bearer: string | undefined) {
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    let body: string | undefined;
    if (options.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(options.form).toString();
    } else if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    try {
      return await fetch(`${server}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
    } catch (err) {
      throw unreachable(server, err);
    }
  }

  async function request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const authenticated = options.authenticated ?? true;
    let credentials = authenticated ? await stored() : undefined;
    if (credentials && credentials.expires_at <= Date.now() + 30_000)
      credentials = await renewed(credentials);
    let res = await send(method, path, options, credentials?.access_token);
    if (res.status === 401 && credentials) {
      credentials = await renewed(credentials);
      res = await send(method, path, options, credentials.access_token);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (res.status === 401 && authenticated) {
      const detail = (parsed as Problem | undefined)?.detail;
      throw signInNeeded(server, `the server refused the sign-in${detail ? `: ${detail}` : ''}`);
    }
    if (!res.ok) {
      const problem = (parsed ?? {}) as Problem;
      const what = problem.detail ?? problem.title ?? (text.slice(0, 200) || res.statusText);
      const next = (res.status === 404 ? options.notFoundHint : undefined) ?? hint(res.status);
      throw new CliExit(
        `hookline: ${what} (HTTP ${res.status})${next ? `; ${next}` : ''}`,
        1,
        problem.code ?? `http_${res.status}`,
      );
    }
    const type = res.headers.get('content-type') ?? '';
    if (!/\bjson\b/.test(type)) {
      throw new CliExit(
        `hookline: ${server}${path} answered ${type || 'no content type'} instead of JSON; this server may be older than the CLI`,
      );
    }
    return parsed as T;
  }

  return { server, store, request, stored };
}

export type ApiClient = ReturnType<typeof createApiClient>;
