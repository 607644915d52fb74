import { DomainError } from './domain/errors.ts';

/**
 * The one closed set of errors that may reach a client. Each code has a stable HTTP status and
 * title; the error handler (src/http/errors-plugin.ts) turns any of them into an RFC 9457 problem
 * document. The domain throws DomainError (a code, no status), which `asHooklineError` maps here.
 */
export const errorCatalog = {
  bad_request: { status: 400, title: 'Bad request' },
  invalid_body: { status: 400, title: 'Invalid request body' },
  invalid_filter: { status: 400, title: 'Invalid filter' },
  /** MCP: a tool argument out of range or malformed where the tool answers it rather than the protocol. */
  invalid_argument: { status: 400, title: 'Invalid argument' },
  missing_header: { status: 400, title: 'Missing required header' },
  unsupported_content_type: { status: 400, title: 'Unsupported content type' },
  invalid_signature: { status: 401, title: 'Signature verification failed' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  forbidden: { status: 403, title: 'Forbidden' },
  provider_disabled: { status: 403, title: 'Provider disabled' },
  invalid_token: { status: 403, title: 'Invalid token' },
  cross_site: { status: 403, title: 'Cross-site request refused' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  request_timeout: { status: 408, title: 'Request timeout' },
  conflict: { status: 409, title: 'Conflict' },
  endpoint_revoked: { status: 409, title: 'Endpoint revoked' },
  lease_expired: { status: 409, title: 'Lease expired' },
  invalid_state: { status: 409, title: 'Invalid state for this move' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  uri_too_long: { status: 414, title: 'URI too long' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  invalid_setting: { status: 422, title: 'Invalid setting' },
  too_many_requests: { status: 429, title: 'Too many requests' },
  headers_too_large: { status: 431, title: 'Request header fields too large' },
  internal: { status: 500, title: 'Internal server error' },
  unavailable: { status: 503, title: 'Service unavailable' },
  storage_unavailable: { status: 503, title: 'Storage unavailable' },
  sandbox_unavailable: { status: 503, title: 'Rule sandbox unavailable' },
  // RULES (issue 7)
  rules_rejected: { status: 422, title: 'Rules rejected by the save dry run' },
  replay_target_required: { status: 400, title: 'Replay target required' },
  replay_refused: { status: 400, title: 'Replay target refused' },
  /** A replay whose target could not be reached (timeout, TLS, network); the attempt is recorded. */
  replay_failed: { status: 502, title: 'Replay target unreachable' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof errorCatalog;

export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  code?: string;
  [extension: string]: unknown;
}

/** Problem `type` URIs are stable and documented in docs/reference/problems.md: `urn:hookline:problem:<code>`. */
export const problemType = (code: ErrorCode): string => `urn:hookline:problem:${code.replace(/_/g, '-')}`;

export class HooklineError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Extra members for the problem document (e.g. `field` for a 422, `errors` for a body). */
  readonly extensions: Readonly<Record<string, unknown>>;

  constructor(
    code: ErrorCode,
    detail?: string,
    extensions: Record<string, unknown> = {},
    options?: ErrorOptions,
  ) {
    super(detail ?? errorCatalog[code].title, options);
    this.name = 'HooklineError';
    this.code = code;
    this.status = errorCatalog[code].status;
    this.extensions = extensions;
  }

  toProblem(instance?: string): ProblemDocument {
    const { title, status } = errorCatalog[this.code];
    return {
      type: problemType(this.code),
      title,
      status,
      // A 5xx never shows internals: the detail of a server fault is the generic title.
      detail: status >= 500 && this.code === 'internal' ? title : this.message,
      ...(instance ? { instance } : {}),
      code: this.code,
      ...this.extensions,
    };
  }
}

export const isHooklineError = (e: unknown): e is HooklineError => e instanceof HooklineError;

/**
 * Any error as one of ours, when it is: a HooklineError as is, a domain refusal (DomainError) as
 * the HooklineError of the same code (every domain code is in the catalogue: the constructor's type
 * says so), message and extensions. Undefined for anything else.
 */
export function asHooklineError(e: unknown): HooklineError | undefined {
  if (e instanceof HooklineError) return e;
  if (e instanceof DomainError)
    return new HooklineError(e.code, e.message, { ...e.extensions }, { cause: e });
  return undefined;
}
