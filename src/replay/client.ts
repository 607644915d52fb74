import { request } from 'undici';
import { replayOutcomes } from '../metrics/instruments.ts';
import { createReplayDispatcher, isReplayRefused, type ReplayDispatcherOptions } from './dispatcher.ts';
import { checkReplayTarget, type GuardOptions, type RefusalReason, type TargetCheck } from './ssrf.ts';

export interface ReplayRequest {
  readonly target: string;
  /** The stored body, byte for byte. */
  readonly body: Uint8Array;
  /** The stored content type, sent exactly as given (omitted when null). */
  readonly contentType: string | null;
  /** Extra headers (e.g. an event id); they cannot replace the ones the client sets. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * `delivered`: the target answered, whatever the status; a 3xx is reported with its Location and
 * never followed. `refused`: the SSRF guard said no (`phase` tells whether at the call or when
 * connecting). `failed`: nothing usable came back.
 */
export type ReplayResult =
  | {
      readonly kind: 'delivered';
      readonly target: string;
      readonly status: number;
      readonly location: string | null;
      /** The start of the response body, as text, at most 1 KiB (cut short if the body stalls). */
      readonly responseSnippet: string;
    }
  | {
      readonly kind: 'refused';
      readonly target: string;
      readonly phase: 'call' | 'connect';
      readonly reason: RefusalReason;
      readonly detail: string;
    }
  | {
      readonly kind: 'failed';
      readonly target: string;
      readonly reason: 'timeout' | 'tls' | 'network';
      readonly detail: string;
    };

export interface ReplayClientOptions extends ReplayDispatcherOptions, GuardOptions {
  readonly headersTimeoutMs?: number;
  readonly bodyTimeoutMs?: number;
  /** Bound on the whole exchange, whatever the parts take. */
  readonly totalTimeoutMs?: number;
  readonly userAgent?: string;
}

export interface ReplayClient {
  replay(req: ReplayRequest): Promise<ReplayResult>;
  /** The call-time check alone, with this client's guard (e.g. for replay targets at vend time). */
  check(target: string): Promise<TargetCheck>;
  close(): Promise<void>;
}

const SNIPPET_BYTES = 1024;
const OWN_HEADERS = new Set([
  'host',
  'content-type',
  'content-length',
  'transfer-encoding',
  'connection',
  'user-agent',
]);

export function createReplayClient(options: ReplayClientOptions = {}): ReplayClient {
  const dispatcher = createReplayDispatcher(options);
  const guard: GuardOptions = { classify: options.classify, resolve: options.resolve };
  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const bodyTimeout = options.bodyTimeoutMs ?? 10_000;
  const totalTimeout = options.totalTimeoutMs ?? 30_000;
  const userAgent = options.userAgent ?? 'hookline-replay';

  async function replay(req: ReplayRequest): Promise<ReplayResult> {
    const checked = await checkReplayTarget(req.target, guard);
    if (!checked.ok)
      return {
        kind: 'refused',
        target: req.target,
        phase: 'call',
        reason: checked.reason,
        detail: checked.detail,
      };
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers ?? {})) {
      if (!OWN_HEADERS.has(name.toLowerCase())) headers[name] = value;
    }
    headers['user-agent'] = userAgent;
    if (req.contentType !== null) headers['content-type'] = req.contentType;
    try {
      const response = await request(checked.url, {
        method: 'POST',
        dispatcher,
        headers,
        body: Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength),
        headersTimeout,
        bodyTimeout,
        signal: AbortSignal.timeout(totalTimeout),
      });
      const responseSnippet = await snippet(response.body);
      const location = response.headers.location;
      return {
        kind: 'delivered',
        target: req.target,
        status: response.statusCode,
        location: typeof location === 'string' ? location : (location?.[0] ?? null),
        responseSnippet,
      };
    } catch (error) {
      return failure(req.target, error);
    }
  }

  return {
    replay: async (req) => {
      const result = await replay(req);
      replayOutcomes.inc({ outcome: result.kind });
      return result;
    },
    check: (target) => checkReplayTarget(target, guard),
    close: () => dispatcher.close(),
  };
}

/**
 * Keeps the start of the response body and discards the rest without buffering it. The status is
 * already in hand, so a body that stalls past its timeout or breaks off only shortens the snippet.
 */
async function snippet(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const kept: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      if (size < SNIPPET_BYTES) kept.push(chunk.subarray(0, SNIPPET_BYTES - size));
      size += chunk.byteLength;
      if (size >= SNIPPET_BYTES) break;
    }
  } catch {
    // Reported through the status; the exchange is over either way.
  } finally {
    body.destroy();
  }
  return Buffer.concat(kept).toString('utf8');
}

function failure(target: string, error: unknown): ReplayResult {
  if (isReplayRefused(error)) {
    return { kind: 'refused', target, phase: 'connect', reason: 'address', detail: (error as Error).message };
  }
  const e = error as { code?: string; name?: string; message?: string; cause?: unknown };
  const code = e.code ?? '';
  const detail = `${e.message ?? String(error)}${code ? ` (${code})` : ''}`;
  if (
    e.name === 'TimeoutError' ||
    e.name === 'AbortError' ||
    ['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'].includes(code)
  ) {
    return { kind: 'failed', target, reason: 'timeout', detail };
  }
  if (/^ERR_TLS|^ERR_SSL|CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code))
    return { kind: 'failed', target, reason: 'tls', detail };
  return { kind: 'failed', target, reason: 'network', detail };
}
