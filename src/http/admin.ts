import { PassThrough } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import ipaddr from 'ipaddr.js';
import type { ProjectionRunner } from '../../projections/engine/types.ts';
import { HooklineError } from '../errors.ts';
import { toHooklineError } from './errors-plugin.ts';

export interface AdminDeps {
  readonly projections: ProjectionRunner;
}

/** The peer of the TCP connection, not request.ip: a trusted proxy must never make a caller "local". */
export function isLoopbackPeer(address: string | undefined): boolean {
  if (!address || !ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  }
  return parsed.range() === 'loopback';
}

const loopbackHost = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::\d{1,5})?$/i;

/**
 * The admin routes answer only callers on this machine, talking to it directly: the connection's
 * peer is a loopback address, no proxy forwarded the request, and the Host names a loopback
 * address (a DNS-rebinding page cannot pass). A browser request from another origin is refused
 * too (Origin must match Host), so a web page cannot start a rebuild.
 */
function assertLocalCaller(request: FastifyRequest): void {
  const h = request.headers;
  const forwarded = h['x-forwarded-for'] ?? h.forwarded ?? h['x-real-ip'];
  const host = h.host ?? '';
  if (!isLoopbackPeer(request.socket.remoteAddress) || forwarded !== undefined || !loopbackHost.test(host)) {
    throw new HooklineError('forbidden', 'the admin routes answer callers on the loopback interface only');
  }
  const origin = h.origin;
  if (origin !== undefined && origin !== `http://${host}` && origin !== `https://${host}`) {
    throw new HooklineError('cross_site', 'the admin routes refuse cross-site requests');
  }
}

/**
 * Operator administration of the read models, used by `hookline projections status|rebuild`
 * when a server holds the embedded data directory:
 * - `GET /admin/projections`: `{ projections: ProjectionStatus[] }`.
 * - `POST /admin/projections/:name/rebuild` (`:name` or `all`): newline-delimited JSON, one
 *   `{ "type": "progress", name, done, total, ratePerSecond, etaSeconds }` line per report,
 *   `{ "type": "done", name, elapsedMs }` per projection rebuilt, and on failure one
 *   `{ "type": "error", name, problem }` line (RFC 9457 document) that ends the stream.
 * The rebuild goes on if the caller disconnects.
 */
export function adminPlugin(deps: AdminDeps) {
  return fp(
    async (app) => {
      const onRequest = async (request: FastifyRequest) => assertLocalCaller(request);

      app.get('/admin/projections', { onRequest }, async (_request, reply) => {
        reply.header('cache-control', 'no-store');
        return { projections: await deps.projections.status() };
      });

      app.post<{ Params: { name: string } }>(
        '/admin/projections/:name/rebuild',
        { onRequest },
        async (request, reply) => {
          const { name } = request.params;
          const statuses = await deps.projections.status();
          const targets = name === 'all' ? statuses : statuses.filter((s) => s.name === name);
          if (targets.length === 0 && name !== 'all') {
            throw new HooklineError('not_found', `no projection named ${name}`, { projection: name });
          }
          const busy = targets.find((s) => s.state === 'rebuilding');
          if (busy) throw new HooklineError('conflict', `a rebuild of ${busy.name} is already running`);

          const out = new PassThrough();
          out.on('error', () => {}); // a caller that went away does not stop the rebuild
          const emit = (line: object) => {
            if (!out.destroyed && !out.writableEnded) out.write(`${JSON.stringify(line)}\n`);
          };
          void (async () => {
            for (const { name: target } of targets) {
              const started = Date.now();
              try {
                await deps.projections.rebuild(target, (p) => emit({ type: 'progress', ...p }));
                emit({ type: 'done', name: target, elapsedMs: Date.now() - started });
              } catch (err) {
                const problem = toHooklineError(err);
                if (problem.status >= 500) request.log.error({ err, projection: target }, 'rebuild failed');
                emit({ type: 'error', name: target, problem: problem.toProblem(request.url.split('?')[0]) });
                break;
              }
            }
            out.end();
          })();
          return reply
            .header('content-type', 'application/x-ndjson; charset=utf-8')
            .header('cache-control', 'no-store')
            .send(out);
        },
      );
    },
    { name: 'hookline-admin', dependencies: ['hookline-errors'] },
  );
}
