import { type Command, InvalidArgumentError } from 'commander';
import { followEvents } from '../client/follow.ts';
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
      const follower = followEvents(api.server, {
        notice: warn,
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
