import { type Command, InvalidArgumentError } from 'commander';
import { EventSource } from 'eventsource';
import { clientFor, wantsJson, withUrl } from '../client/index.ts';
import { warn } from '../client/output.ts';

interface EventSummary {
  id: number;
  provider: string;
  event_type: string | null;
  trust_mode: string;
  verified: boolean;
  payload_size: number;
  received_at: string;
}

const positive = (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
};

/** `hookline events tail`: the live log in the terminal, from GET /events (spec 4.4, 6). */
export function registerEvents(program: Command): void {
  const events = program.command('events').description('the event log');
  withUrl(events.command('tail'))
    .description('follow accepted deliveries live (one line each; --json: one JSON object per line)')
    .option('--provider <name>', 'only this provider (codehost, generic:<name>, operator, …)')
    .option('--count <n>', 'exit after this many events', positive)
    .option('--json', 'one JSON EventSummary per line')
    .action(async (opts: { provider?: string; count?: number }, cmd: Command) => {
      const api = clientFor(cmd);
      const json = wantsJson(cmd);
      let seen = 0;
      let lost = false;
      await new Promise<void>((resolve) => {
        const source = new EventSource(`${api.server}/events`);
        const stop = () => {
          source.close();
          resolve();
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
        source.onopen = () => {
          if (lost) warn('(reconnected)');
          else if (!json) warn(`Following ${api.server}/events; Ctrl-C to stop.`);
          lost = false;
        };
        source.onerror = (e) => {
          if (!lost) {
            warn(
              `(connection to ${api.server}/events lost${e.message ? `: ${e.message}` : ''}; reconnecting. Is the server running?)`,
            );
          }
          lost = true;
        };
        source.addEventListener('event-received', (message) => {
          let e: EventSummary;
          try {
            e = JSON.parse(message.data) as EventSummary;
          } catch {
            return;
          }
          if (opts.provider && e.provider !== opts.provider) return;
          process.stdout.write(
            json
              ? `${JSON.stringify(e)}\n`
              : `${e.received_at}  #${e.id}  ${e.provider}  ${e.event_type ?? '-'}  ${e.trust_mode}${e.verified ? ' verified' : ''}  ${e.payload_size} B\n`,
          );
          seen++;
          if (opts.count !== undefined && seen >= opts.count) stop();
        });
      });
    });
}
