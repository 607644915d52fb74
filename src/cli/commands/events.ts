import { type Command, InvalidArgumentError } from 'commander';
import { clientFor, wantsJson, withUrl } from '../client/index.ts';
import { printJson, printTable, say, warn } from '../client/output.ts';

interface EventSummary {
  id: number;
  provider: string;
  event_type: string | null;
  trust_mode: string;
  verified: boolean;
  payload_size: number;
  received_at: string;
}

interface EventPage {
  events: EventSummary[];
  next_cursor: string | null;
}

interface EventDetail extends EventSummary {
  verify_detail: string | null;
  external_id: string | null;
  content_type: string | null;
  source_ip: string | null;
  headers: Record<string, string>;
  payload: string;
  encoding: 'utf-8' | 'base64';
}

interface ReplayAttempt {
  event_id: number;
  attempt: number;
  target: string;
  outcome: 'delivered' | 'refused' | 'failed';
  status: number | null;
  location: string | null;
  latency_ms: number;
}

const eventId = (raw: string) => {
  if (!/^[0-9]{1,18}$/.test(raw) || Number(raw) < 1)
    throw new InvalidArgumentError('an event id is a whole number');
  return raw;
};

/** A value as one POSIX shell word (the "More:" line is meant to be pasted). */
const shellWord = (value: string) =>
  /^[A-Za-z0-9_.,:/@%+=-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;

const positive = (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
};

/**
 * `hookline events list|show|replay` (GET /api/v1/events, /api/v1/events/{id}, POST
 * /api/v1/events/{id}/replay) and `hookline events tail`, the live log in the terminal, from
 * GET /events (spec 4.4, 6).
 */
export function registerEvents(program: Command): void {
  const events = program.command('events').description('the event log');

  withUrl(events.command('list'))
    .description(
      'accepted deliveries you may read, newest first: the instance receivers’ and those of your endpoints (webhooks, hand-offs)',
    )
    .option('--provider <name>', 'only this provider (codehost, generic:<name>, webhook:<id>, operator, …)')
    .option('--type <event_type>', 'only this event type (push, invoice.paid, …)')
    .option('--since <when>', 'from this ISO-8601 date-time or event id on (inclusive)')
    .option(
      '--q <text>',
      'full text over payloads and event types: words (all must match), "a phrase", -word, or',
    )
    .option('--limit <n>', 'page size, 1 to 200 (default 50)')
    .option('--cursor <cursor>', 'the next page: the cursor the previous page printed')
    .option('--json', 'the page as JSON: { events: EventSummary[], next_cursor }')
    .action(
      async (
        opts: {
          provider?: string;
          type?: string;
          since?: string;
          q?: string;
          limit?: string;
          cursor?: string;
        },
        cmd: Command,
      ) => {
        const api = clientFor(cmd);
        const query = new URLSearchParams();
        if (opts.provider !== undefined) query.set('provider', opts.provider);
        if (opts.type !== undefined) query.set('event_type', opts.type);
        if (opts.since !== undefined) query.set('since', opts.since);
        if (opts.q !== undefined) query.set('q', opts.q);
        if (opts.limit !== undefined) query.set('limit', opts.limit);
        if (opts.cursor !== undefined) query.set('cursor', opts.cursor);
        const qs = query.toString();
        const page = await api.request<EventPage>('GET', `/api/v1/events${qs ? `?${qs}` : ''}`);
        if (wantsJson(cmd)) return printJson(page);
        if (page.events.length === 0) return say('No events.');
        printTable(
          page.events.map((e) => ({ ...e, verified: e.verified ? 'yes' : 'no' })),
          ['id', 'received_at', 'provider', 'event_type', 'trust_mode', 'verified', 'payload_size'],
        );
        if (page.next_cursor) {
          // The cursor continues this listing: the next page needs the same filters.
          const same = (
            [
              ['--provider', opts.provider],
              ['--type', opts.type],
              ['--since', opts.since],
              ['--q', opts.q],
              ['--limit', opts.limit],
            ] as const
          )
            .filter(([, value]) => value !== undefined)
            .map(([flag, value]) => ` ${flag} ${shellWord(value as string)}`)
            .join('');
          say(`More: hookline events list --cursor ${page.next_cursor}${same}`);
        }
      },
    );

  withUrl(events.command('show'))
    .description('one accepted delivery: its fields, sanitized headers and payload')
    .argument('<id>', 'the event id', eventId)
    .option('--json', 'the EventDetail as JSON')
    .action(async (id: string, _opts, cmd: Command) => {
      const api = clientFor(cmd);
      const e = await api.request<EventDetail>('GET', `/api/v1/events/${id}`, {
        notFoundHint: 'list the ids you may read with `hookline events list`',
      });
      if (wantsJson(cmd)) return printJson(e);
      say(`Event #${e.id}  ${e.provider}  ${e.event_type ?? '-'}`);
      say(`  Received     ${e.received_at}`);
      say(`  Trust        ${e.trust_mode}${e.verified ? ', verified' : ''} (${e.verify_detail ?? '-'})`);
      say(`  External id  ${e.external_id ?? '-'}`);
      say(`  Content type ${e.content_type ?? '-'}`);
      say(`  Source IP    ${e.source_ip ?? '-'}`);
      say(`  Size         ${e.payload_size} B`);
      say('Headers:');
      for (const [name, value] of Object.entries(e.headers)) say(`  ${name}: ${value}`);
      say(e.encoding === 'base64' ? 'Payload (base64, not UTF-8):' : 'Payload:');
      say(e.payload);
    });
  withUrl(events.command('replay'))
    .description(
      'send a delivery again, bytes and content type as received, to an https URL (POST /api/v1/events/{id}/replay): the same SSRF guard as the MCP verb, a redirect reported and never followed; every attempt is recorded and listed on the delivery’s page',
    )
    .argument('<id>', 'the event id', eventId)
    .requiredOption('--to <url>', 'where to send it: https, a host that resolves only to public addresses')
    .option('--json', 'the recorded attempt as JSON')
    .action(async (id: string, opts: { to: string }, cmd: Command) => {
      const api = clientFor(cmd);
      const a = await api.request<ReplayAttempt>('POST', `/api/v1/events/${id}/replay`, {
        body: { target_url: opts.to },
        notFoundHint: 'list the ids you may read with `hookline events list`',
      });
      if (wantsJson(cmd)) return printJson(a);
      say(
        `Replayed #${a.event_id} to ${a.target}: HTTP ${a.status}${a.location ? ` (redirect to ${a.location}, not followed)` : ''} in ${a.latency_ms} ms`,
      );
    });

  withUrl(events.command('tail'))
    .description(
      'follow accepted deliveries live (one line each; --json: one JSON object per line); survives server restarts, resuming where it left off; Ctrl-C to stop',
    )
    .option('--provider <name>', 'only this provider (codehost, generic:<name>, operator, …)')
    .option('--type <event_type>', 'only this event type (push, invoice.paid, …)')
    .option('--count <n>', 'exit after this many events', positive)
    .option('--json', 'one JSON EventSummary per line')
    .action(async (opts: { provider?: string; type?: string; count?: number }, cmd: Command) => {
      const api = clientFor(cmd);
      const json = wantsJson(cmd);
      let seen = 0;
      // Loaded here: only the followers need the EventSource client.
      const { followEvents } = await import('../client/follow.ts');
      const follower = followEvents(api.server, {
        notice: warn,
        // What the stream skipped is in the log: the notice names the command that lists it.
        onReset: (why, lastId) => {
          const filters = [
            ...(opts.provider ? [`--provider ${opts.provider}`] : []),
            ...(opts.type ? [`--type ${opts.type}`] : []),
          ];
          const list = [
            'hookline events list',
            ...(lastId === undefined ? [] : [`--since ${lastId + 1}`]),
            ...filters,
          ];
          warn(
            `(the server could not replay what arrived while disconnected (${why}); following live from now: what arrived meanwhile${lastId === undefined ? '' : ` after #${lastId}`} is not shown here; \`${list.join(' ')}\` lists it)`,
          );
        },
        onDelivery: (delivery) => {
          const e = delivery as unknown as EventSummary;
          if (opts.provider && e.provider !== opts.provider) return;
          if (opts.type && e.event_type !== opts.type) return;
          process.stdout.write(
            json
              ? `${JSON.stringify(e)}\n`
              : `${e.received_at}  #${e.id}  ${e.provider}  ${e.event_type ?? '-'}  ${e.trust_mode}${e.verified ? ' verified' : ''}  ${e.payload_size} B\n`,
          );
          seen++;
          if (opts.count !== undefined && seen >= opts.count) follower.stop();
        },
      });
      const stop = () => follower.stop();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await follower.done;
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    });
}
