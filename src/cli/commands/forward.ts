import { type Command, InvalidArgumentError, Option } from 'commander';
import { clientFor, wantsJson, withUrl } from '../client/index.ts';
import { warn } from '../client/output.ts';
import { forwardHeaders, newLocalSecret } from '../forward/resign.ts';
import { CliExit } from '../support.ts';

/** GET /api/v1/events/{id}. */
interface Delivery {
  id: number;
  provider: string;
  event_type: string | null;
  content_type: string | null;
  headers: Record<string, string>;
  /** The body as received: UTF-8 text, or base64 (`encoding`). */
  payload: string;
  encoding: 'utf-8' | 'base64';
}

interface Forwarded {
  id: number;
  provider: string;
  event_type: string | null;
  status: number | null;
  latency_ms: number;
  error: string | null;
}

const targetUrl = (raw: string): URL => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidArgumentError('must be a URL, e.g. http://localhost:3000/hook');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new InvalidArgumentError('must be an http:// or https:// URL');
  }
  return url;
};

const eventId = (raw: string): number => {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError('must be an event id (a positive integer)');
  return n;
};

const TIMEOUT_MS = 30_000;

/**
 * `hookline forward --to <url>` (like `stripe listen --forward-to`): every accepted delivery,
 * fetched whole from the operator API and POSTed byte for byte to a URL on this machine,
 * re-signed in its provider's scheme with a local secret. It runs where the person runs it and
 * sends only to the URL they typed, so no SSRF guard applies (README).
 */
export function registerForward(program: Command): void {
  withUrl(program.command('forward'))
    .description(
      "forward deliveries to a local app as they arrive, byte for byte with their content type and provider headers, re-signed in the provider's scheme with a local secret printed at start; one line per delivery; Ctrl-C to stop",
    )
    .requiredOption('--to <url>', 'where to POST each delivery (e.g. http://localhost:3000/hook)', targetUrl)
    .option('--provider <name>', 'only this provider (codehost, payments, generic:<name>, webhook:<id>, …)')
    .option('--type <event_type>', 'only this event type (push, invoice.paid, …)')
    .option(
      '--from <id>',
      'first forward the deliveries from this event id up to now, then follow live',
      eventId,
    )
    .addOption(
      new Option(
        '--secret <secret>',
        'sign with this secret instead of a new one (keep your app configured across runs)',
      ).env('HOOKLINE_FORWARD_SECRET'),
    )
    .action(
      async (
        opts: { to: URL; provider?: string; type?: string; from?: number; secret?: string },
        cmd: Command,
      ) => {
        const api = clientFor(cmd);
        const json = wantsJson(cmd);
        await api.stored(); // not signed in: say so before following anything
        const secret = opts.secret ?? newLocalSecret();
        warn(`Forwarding deliveries to ${opts.to.href}`);
        warn(`Signing secret for your local app: ${secret}`);
        const wanted = (d: { provider: string; event_type: string | null }) =>
          (!opts.provider || d.provider === opts.provider) && (!opts.type || d.event_type === opts.type);

        const done = new Set<number>();
        let failure: unknown;
        let chain: Promise<void> = Promise.resolve();
        const enqueue = (job: () => Promise<void>) => {
          chain = chain.then(job).catch((err: unknown) => {
            failure = err;
            follower.stop();
          });
        };

        /** The delivery, or null when the log no longer (or never) holds it, or it is not this operator's. */
        const fetchDelivery = async (id: number): Promise<Delivery | null> => {
          try {
            return await api.request<Delivery>('GET', `/api/v1/events/${id}`);
          } catch (err) {
            if (err instanceof CliExit && err.code === 'not_found') return null;
            throw err;
          }
        };

        const forward = async (d: Delivery): Promise<void> => {
          done.add(d.id);
          const body = Buffer.from(d.payload, d.encoding === 'base64' ? 'base64' : 'utf8');
          const { headers } = forwardHeaders({
            provider: d.provider,
            contentType: d.content_type,
            headers: d.headers,
            body,
            secret,
            nowS: Math.floor(Date.now() / 1000),
          });
          const started = performance.now();
          const line: Forwarded = {
            id: d.id,
            provider: d.provider,
            event_type: d.event_type,
            status: null,
            latency_ms: 0,
            error: null,
          };
          try {
            const res = await fetch(opts.to, {
              method: 'POST',
              headers,
              body,
              redirect: 'manual',
              signal: AbortSignal.timeout(TIMEOUT_MS),
            });
            await res.arrayBuffer().catch(() => undefined);
            line.status = res.status;
          } catch (err) {
            const cause = (err as { cause?: { code?: string; message?: string } }).cause;
            line.error = cause?.code ?? cause?.message ?? (err as Error).message;
          }
          line.latency_ms = Math.round(performance.now() - started);
          process.stdout.write(
            json
              ? `${JSON.stringify(line)}\n`
              : `#${line.id}  ${line.provider}  ${line.event_type ?? '-'}  ${line.status ?? `error ${line.error}`}  ${line.latency_ms} ms\n`,
          );
        };

        // Live deliveries wait in order behind the replay (if any), which starts at the stream's
        // `ready`: everything up to there is in the log, everything after comes live.
        let replaying = opts.from !== undefined;
        const held: { id: number; provider: string; event_type: string | null }[] = [];
        const live = (s: { id: number; provider: string; event_type: string | null }) =>
          enqueue(async () => {
            if (done.has(s.id) || !wanted(s)) return;
            const d = await fetchDelivery(s.id);
            if (d) await forward(d);
          });

        // Loaded here: only the followers need the EventSource client.
        const { followEvents } = await import('../client/follow.ts');
        const follower = followEvents(api.server, {
          notice: warn,
          onReady: () => {
            if (opts.from === undefined) return;
            const from = opts.from;
            enqueue(async () => {
              let id = from;
              for (;;) {
                const d = await fetchDelivery(id);
                if (!d) break;
                if (wanted(d)) await forward(d);
                else done.add(d.id);
                id++;
              }
              replaying = false;
              for (const s of held.splice(0)) if (s.id >= id) live(s);
            });
          },
          onDelivery: (raw) => {
            const s = raw as unknown as { id: number; provider: string; event_type: string | null };
            if (replaying) held.push(s);
            else live(s);
          },
        });
        const stop = () => follower.stop();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        await follower.done;
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        if (failure) throw failure;
      },
    );
}
