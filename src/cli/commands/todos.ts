import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { clientFor, wantsJson, withUrl } from '../client/index.ts';
import { printJson, say } from '../client/output.ts';
import { CliExit } from '../support.ts';

async function readPayload(opts: { payload?: string; payloadFile?: string }): Promise<unknown> {
  if (opts.payload !== undefined && opts.payloadFile !== undefined) {
    throw new CliExit('hookline: give --payload or --payload-file, not both');
  }
  let text: string | undefined = opts.payload;
  if (opts.payloadFile !== undefined) {
    text =
      opts.payloadFile === '-'
        ? await new Promise<string>((resolve, reject) => {
            let data = '';
            process.stdin.setEncoding('utf8');
            process.stdin.on('data', (c: string) => {
              data += c;
            });
            process.stdin.on('end', () => resolve(data));
            process.stdin.on('error', reject);
          })
        : await readFile(opts.payloadFile, 'utf8').catch((err: Error) => {
            throw new CliExit(`hookline: cannot read ${opts.payloadFile}: ${err.message}`);
          });
  }
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CliExit(
      `hookline: the payload is not JSON (${(err as Error).message}); quote it, e.g. --payload '{"pr": 42}'`,
    );
  }
}

/** `hookline todos push` (spec 4.13). */
export function registerTodos(program: Command): void {
  const todos = program.command('todos').description('hand work to your agents');
  withUrl(todos.command('push'))
    .description("push a todo onto an endpoint's queue and ring its doorbell")
    .argument('<ref>', 'the endpoint slug or ep_ id')
    .argument('<title>', 'one line, at most 200 characters')
    .option('--queue <queue>', 'one of the endpoint’s queues (needed only when it drains several)')
    .option('--kind <kind>', 'the todo kind the agent sees (default: operator)')
    .option(
      '--key <key>',
      'idempotency key: pushing again with it returns the live todo instead of a new one',
    )
    .option('--payload <json>', 'JSON handed to the agent verbatim')
    .option('--payload-file <path>', 'read the JSON payload from a file (- for standard input)')
    .option('--json', 'machine-readable JSON output')
    .action(
      async (
        ref: string,
        title: string,
        opts: { queue?: string; kind?: string; key?: string; payload?: string; payloadFile?: string },
        cmd: Command,
      ) => {
        const api = clientFor(cmd);
        const payload = await readPayload(opts);
        const out = await api.request<{
          id: string;
          slug: string;
          queue: string;
          state: string;
          created: boolean;
          event_id: number;
        }>('POST', `/api/v1/endpoints/${encodeURIComponent(ref)}/todos`, {
          body: {
            title,
            ...(opts.queue ? { queue: opts.queue } : {}),
            ...(opts.kind ? { kind: opts.kind } : {}),
            ...(opts.key ? { key: opts.key } : {}),
            ...(payload === undefined ? {} : { payload }),
          },
        });
        if (wantsJson(cmd)) return printJson(out);
        say(
          out.created
            ? `Pushed ${out.id} onto ${out.slug}/${out.queue} (${out.state}; event ${out.event_id}).`
            : `A live todo already has that key: ${out.id} on ${out.slug}/${out.queue} (${out.state}); nothing new was pushed.`,
        );
      },
    );
}
