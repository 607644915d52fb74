import { setTimeout as sleep } from 'node:timers/promises';
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

/** A row of GET /api/v1/events, and an `event-received` message of the stream. */
interface Summary {
  id: number;
  provider: string;
  event_type: string | null;
}

/** GET /api/v1/events. `retained_from`: the first delivery id the log keeps (retention). */
interface EventPage {
  events: Summary[];
  next_cursor: string | null;
  retained_from?: number;
}

/** Failures of a read that a moment fixes: the server restarting, or not reachable yet. */
const TRANSIENT = new Set(['unreachable', 'unavailable', 'http_502', 'http_503', 'http_504']);

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

        // Every job (the replay, each delivery of the stream) runs in turn, so lines come in id order.
        let stopped = false;
        const stopping = new AbortController();
        let failure: unknown;
        let chain: Promise<void> = Promise.resolve();
        const enqueue = (job: () => Promise<void>) => {
          chain = chain.then(job).catch((err: unknown) => {
            if (!stopped) failure ??= err;
            follower.stop();
          });
        };
        /** Waits `ms`, less when Ctrl-C comes first. */
        const pause = (ms: number) => sleep(ms, undefined, { signal: stopping.signal }).catch(() => {});

        /**
         * A read of the operator API, tried again while the server is away or stopping (a restart),
         * as the stream itself reconnects: a delivery is never skipped because the server was down.
         */
        const read = async <T>(path: string): Promise<T> => {
          let delay = 250;
          for (;;) {
            try {
              return await api.request<T>('GET', path);
            } catch (err) {
              if (stopped || !(err instanceof CliExit) || !TRANSIENT.has(err.code)) throw err;
              await pause(delay);
              delay = Math.min(delay * 2, 5000);
            }
          }
        };

        /** The delivery, or null when the log no longer (or never) holds it, or it is not this operator's. */
        const fetchDelivery = async (id: number): Promise<Delivery | null> => {
          try {
            return await read<Delivery>(`/api/v1/events/${id}`);
          } catch (err) {
            if (err instanceof CliExit && err.code === 'not_found') return null;
            throw err;
          }
        };

        /**
         * The deliveries from `since` on that this operator may read and the filters let through,
         * oldest first, from GET /api/v1/events (operator-scoped: another operator's deliveries
         * are not in it, so they neither stop nor hold up the range), every page of it.
         */
        const listFrom = async (since: number): Promise<{ items: Summary[]; retainedFrom?: number }> => {
          const items: Summary[] = [];
          let retainedFrom: number | undefined;
          let cursor: string | null = null;
          do {
            const query = new URLSearchParams({ since: String(since), limit: '200' });
            if (opts.provider) query.set('provider', opts.provider);
            if (opts.type) query.set('event_type', opts.type);
            if (cursor) query.set('cursor', cursor);
            const page: EventPage = await read<EventPage>(`/api/v1/events?${query}`);
            retainedFrom ??= page.retained_from;
            items.push(...page.events);
            cursor = page.next_cursor;
          } while (cursor && !stopped);
          items.sort((a, b) => a.id - b.id);
          return retainedFrom === undefined ? { items } : { items, retainedFrom };
        };

        const forward = async (d: Delivery): Promise<void> => {
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

        /** Forwards the listed deliveries up to `last` (all when absent), oldest first; the number sent. */
        const forwardListed = async (items: readonly Summary[], last = Number.POSITIVE_INFINITY) => {
          let sent = 0;
          for (const s of items) {
            if (stopped) break;
            if (s.id > last || !wanted(s)) continue;
            const d = await fetchDelivery(s.id); // null: pruned meanwhile
            if (d) {
              await forward(d);
              sent++;
            }
          }
          return sent;
        };

        /**
         * Every delivery up to `covered` has been dealt with. The stream sends every delivery, in id
         * order, so a stream delivery beyond `covered + 1` means some were not seen: those the
         * replay's listing could not hold yet (the log read model a moment behind the stream's
         * `ready`), or those a `reset` of the stream skipped.
         */
        let covered: number | undefined = opts.from === undefined ? undefined : opts.from - 1;

        /** Says what a gap's fill forwarded, when it forwarded any. */
        const filled = (sent: number, first: number, last: number) => {
          if (sent > 0)
            warn(`(forwarded ${sent} from the log that the stream did not send: #${first} to #${last})`);
        };

        /** The deliveries first..last this operator may read, from the log once it holds `last`. */
        const fill = async (first: number, last: number): Promise<void> => {
          // The detail read waits (bounded) for the log read model to pass `last`, whoever's it is.
          await fetchDelivery(last);
          filled(await forwardListed((await listFrom(first)).items, last), first, last);
        };

        const fromStream = (s: Summary) =>
          enqueue(async () => {
            if (covered !== undefined && s.id <= covered) return; // the replay forwarded it
            if (covered !== undefined && s.id > covered + 1) await fill(covered + 1, s.id - 1);
            if (wanted(s)) {
              const d = await fetchDelivery(s.id); // null: another operator's
              if (d) await forward(d);
            }
            covered = Math.max(covered ?? s.id, s.id);
          });

        // Loaded here: only the followers need the EventSource client.
        const { followEvents } = await import('../client/follow.ts');
        const follower = followEvents(api.server, {
          notice: warn,
          // `ready`: every delivery up to the stream's head is in the log, every later one comes
          // live, queued behind this replay.
          onReady: () => {
            const from = opts.from;
            if (from === undefined) return;
            enqueue(async () => {
              const { items, retainedFrom } = await listFrom(from);
              if (retainedFrom !== undefined && from < retainedFrom) {
                warn(
                  `(--from ${from} is older than what the log keeps: deliveries before #${retainedFrom} were pruned by retention; forwarding from #${retainedFrom})`,
                );
              }
              await forwardListed(items);
              covered = items.reduce((max, s) => Math.max(max, s.id), from - 1);
            });
          },
          onDelivery: (raw) => fromStream(raw as unknown as Summary),
          // The stream skipped what came while disconnected: those deliveries are forwarded from
          // the log now, behind whatever is queued, instead of at the next delivery's gap check.
          onReset: (why) =>
            enqueue(async () => {
              const skipped = `(the server could not replay what arrived while disconnected (${why})`;
              if (covered === undefined) {
                warn(
                  `${skipped}; following live from now: what arrived meanwhile is not forwarded; \`hookline forward --from <id>\` forwards it)`,
                );
                return;
              }
              const first = covered + 1;
              warn(`${skipped}; forwarding the deliveries from #${first} from the log)`);
              const { items } = await listFrom(first);
              const sent = await forwardListed(items);
              covered = items.reduce((max, s) => Math.max(max, s.id), covered);
              filled(sent, first, covered);
            }),
        });
        const stop = () => {
          stopped = true;
          stopping.abort();
          follower.stop();
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        await follower.done;
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        if (failure) throw failure;
      },
    );
}
