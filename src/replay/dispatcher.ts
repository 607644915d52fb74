import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';
import {
  type ClassifyAddress,
  classifyAddress,
  describeRefusal,
  type ResolveHost,
  resolveHost,
} from './ssrf.ts';

/** Raised by the connect-time guard; undici hands it back as the request's error. */
export class ReplayRefusedError extends Error {
  readonly code = 'HOOKLINE_REPLAY_REFUSED';
  override readonly name = 'ReplayRefusedError';
}

export const isReplayRefused = (error: unknown): error is ReplayRefusedError =>
  error instanceof ReplayRefusedError ||
  (typeof error === 'object' &&
    error !== null &&
    (error as { code?: unknown }).code === 'HOOKLINE_REPLAY_REFUSED');

export interface ReplayDispatcherOptions {
  readonly connectTimeoutMs?: number;
  /** Test only: lets a test count its own server as public. */
  readonly classify?: ClassifyAddress;
  /** Test only: answers name lookups without DNS. */
  readonly resolve?: ResolveHost;
  /** Test only: extra trusted CA certificates (PEM), for a test's self-signed server. */
  readonly ca?: string | readonly string[];
}

/**
 * A lookup for net/tls.connect that refuses a host if any of its addresses is not public, so the
 * address dialed is the one checked (no window for DNS rebinding between check and connect).
 */
function guardedLookup(resolve: ResolveHost, classify: ClassifyAddress): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        for (const address of addresses) {
          const verdict = classify(address);
          if (!verdict.public) {
            const detail = `${hostname} resolves to ${describeRefusal(address, verdict)}`;
            callback(new ReplayRefusedError(detail) as NodeJS.ErrnoException, '', 0);
            return;
          }
        }
        const wanted = options.family === 4 || options.family === 6 ? options.family : 0;
        const usable = addresses
          .map((address) => ({ address, family: isIP(address) }))
          .filter((a) => wanted === 0 || a.family === wanted);
        const first = usable[0];
        if (!first) {
          const error = Object.assign(new Error(`${hostname} has no usable addresses`), {
            code: 'ENOTFOUND',
          });
          callback(error, '', 0);
        } else if (options.all) {
          (callback as (e: null, all: typeof usable) => void)(null, usable);
        } else {
          callback(null, first.address, first.family);
        }
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}

/**
 * An undici dispatcher whose every connection passes the SSRF guard at connect time: names go
 * through the guarded lookup; IP literals, which skip lookup, are classified before dialing; and
 * the peer address of the connected socket is checked once more.
 */
export function createReplayDispatcher(options: ReplayDispatcherOptions = {}): Agent {
  const classify = options.classify ?? classifyAddress;
  const resolve = options.resolve ?? resolveHost;
  const connector = buildConnector({
    timeout: options.connectTimeoutMs ?? 5_000,
    lookup: guardedLookup(resolve, classify),
    allowH2: false,
    ...(options.ca ? { ca: [...(typeof options.ca === 'string' ? [options.ca] : options.ca)] } : {}),
  });
  const connect: buildConnector.connector = (opts, callback) => {
    const host = opts.hostname.startsWith('[') ? opts.hostname.slice(1, -1) : opts.hostname;
    if (isIP(host) !== 0) {
      const verdict = classify(host);
      if (!verdict.public) {
        callback(new ReplayRefusedError(describeRefusal(host, verdict)), null);
        return;
      }
    }
    connector(opts, (error, socket) => {
      if (error || !socket) {
        callback(error ?? new Error('connect failed'), null);
        return;
      }
      const peer = socket.remoteAddress;
      const verdict = peer ? classify(peer) : ({ public: false, range: 'unknown peer' } as const);
      if (!verdict.public) {
        socket.destroy();
        callback(new ReplayRefusedError(describeRefusal(peer ?? 'the peer', verdict)), null);
        return;
      }
      callback(null, socket);
    });
  };
  return new Agent({ connect, connections: 4, pipelining: 1 });
}
