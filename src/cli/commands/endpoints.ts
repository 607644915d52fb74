import { type Command, InvalidArgumentError } from 'commander';
import { clientFor, wantsJson, withUrl } from '../client/index.ts';
import { printJson, printTable, say } from '../client/output.ts';
import { CliExit } from '../support.ts';

interface VendOut {
  id: string;
  agent_name: string;
  slug: string;
  mcp_url: string;
  token: string;
  queue: string;
  queues: string[];
  verbs: string[];
  webhook: {
    webhook_id: string;
    ingest_url: string;
    trust_mode: string;
    scheme: string;
    signing_secret: string | null;
  };
  mcp_json: unknown;
  expires_at: string | null;
  replay_targets: string[];
}

interface EndpointOut {
  id: string;
  slug: string;
  agent_name: string;
  state: string;
  queues: string[];
  verbs: string[];
  expires_at: string | null;
  replay_targets: string[];
  mcp_url: string;
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** `7d`, `12h`, `30m` or an ISO date-time: when the endpoint stops working. */
function expiry(raw: string): string {
  const rel = /^(\d+)([mhd])$/.exec(raw.trim());
  if (rel) {
    const ms = Number(rel[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[rel[2] as 'm' | 'h' | 'd'];
    return new Date(Date.now() + ms).toISOString();
  }
  const at = new Date(raw);
  if (Number.isNaN(at.getTime()) || !/\d{4}-\d{2}-\d{2}T/.test(raw)) {
    throw new InvalidArgumentError('give a duration (30m, 12h, 7d) or an ISO date-time with a time zone');
  }
  return at.toISOString();
}

/** `hookline endpoints vend|list|update|revoke` (spec 4.11, 4.12, the scope change and the revoke operation). */
export function registerEndpoints(program: Command): void {
  const endpoints = program
    .command('endpoints')
    .description('vend, list, update and revoke MCP endpoints for your agents');

  withUrl(endpoints.command('vend'))
    .description('register (or reuse) an agent and mint its endpoint; the token is shown only now')
    .argument('<name>', 'agent name (the slug derives from it)')
    .option(
      '--queue <queue>',
      'a queue the endpoint drains (repeat for several, up to 16; default: inbox); its webhook feeds the first',
      collect,
    )
    .option('--verb <verb>', 'allow only this MCP verb (repeat for several; default: all)', collect)
    .option('--expires <when>', 'stop working after a duration (30m, 12h, 7d) or at a date-time', expiry)
    .option(
      '--replay-target <url>',
      'an https URL the endpoint may replay deliveries to (repeatable)',
      collect,
    )
    .option(
      '--webhook-scheme <scheme>',
      'how its webhook’s senders sign: none (default: the URL alone), standard, codehost, payments or chat',
    )
    .option(
      '--webhook-secret <secret>',
      'the signing secret the sender gave you (default: a new one, shown once)',
    )
    .option('--json', 'machine-readable JSON output (includes the token)')
    .action(
      async (
        name: string,
        opts: {
          queue?: string[];
          verb?: string[];
          expires?: string;
          replayTarget?: string[];
          webhookScheme?: string;
          webhookSecret?: string;
        },
        cmd: Command,
      ) => {
        const api = clientFor(cmd);
        const out = await api.request<VendOut>('POST', '/api/v1/endpoints', {
          body: {
            name,
            ...(opts.queue?.length === 1 ? { queue: opts.queue[0] } : {}),
            ...(opts.queue && opts.queue.length > 1 ? { queues: opts.queue } : {}),
            ...(opts.verb ? { verbs: opts.verb } : {}),
            ...(opts.expires ? { expires_at: opts.expires } : {}),
            ...(opts.replayTarget ? { replay_targets: opts.replayTarget } : {}),
            ...(opts.webhookScheme ? { webhook_scheme: opts.webhookScheme } : {}),
            ...(opts.webhookSecret ? { webhook_secret: opts.webhookSecret } : {}),
          },
        });
        if (wantsJson(cmd)) return printJson(out);
        say(`Vended ${out.slug} (${out.id}) for agent "${out.agent_name}".`);
        say('');
        say(`  MCP URL      ${out.mcp_url}`);
        say(`  Token        ${out.token}`);
        say(`  Queues       ${out.queues.join(', ')}`);
        say(`  Webhook      ${out.webhook.ingest_url}  (trust: ${out.webhook.trust_mode})`);
        say(
          `  Signed by    ${out.webhook.scheme === 'none' ? 'none: the URL is the credential' : out.webhook.scheme}`,
        );
        if (out.webhook.signing_secret) say(`  Secret       ${out.webhook.signing_secret}`);
        say(`  Expires      ${out.expires_at ?? 'never'}`);
        say(`  Verbs        ${out.verbs.join(', ')}`);
        if (out.replay_targets.length > 0) say(`  Replay to    ${out.replay_targets.join(', ')}`);
        say('');
        say(
          out.webhook.signing_secret
            ? 'The token, the webhook URL and its secret are shown only now. MCP client configuration:'
            : 'The token and the webhook URL are shown only now. MCP client configuration:',
        );
        say(JSON.stringify(out.mcp_json, null, 2));
      },
    );

  withUrl(endpoints.command('list'))
    .description('list your endpoints (credentials are never shown again)')
    .option('--json', 'machine-readable JSON output')
    .action(async (_opts, cmd: Command) => {
      const api = clientFor(cmd);
      const rows = await api.request<EndpointOut[]>('GET', '/api/v1/endpoints');
      if (wantsJson(cmd)) return printJson(rows);
      if (rows.length === 0) return say('No endpoints yet. `hookline endpoints vend <name>` mints one.');
      printTable(
        rows.map((r) => ({ ...r, agent: r.agent_name, expires: r.expires_at })),
        ['slug', 'agent', 'state', 'queues', 'expires', 'id'],
      );
    });

  withUrl(endpoints.command('update'))
    .description('change the queues an endpoint drains, or narrow its verbs')
    .argument('<ref>', 'the endpoint slug or ep_ id')
    .option('--queue <queue>', 'a queue it drains from now on (repeat for each; replaces the list)', collect)
    .option('--verb <verb>', 'a verb it keeps (repeat for each; verbs only narrow)', collect)
    .option(
      '--move-to <queue>',
      'move the pending and claimed todos of removed queues to this one (else removing such a queue is refused)',
    )
    .option('--json', 'machine-readable JSON output')
    .action(
      async (ref: string, opts: { queue?: string[]; verb?: string[]; moveTo?: string }, cmd: Command) => {
        if (!opts.queue && !opts.verb) {
          throw new CliExit('hookline: give --queue, --verb or both', 1, 'usage');
        }
        const api = clientFor(cmd);
        const out = await api.request<EndpointOut>('PATCH', `/api/v1/endpoints/${encodeURIComponent(ref)}`, {
          body: {
            ...(opts.queue ? { queues: opts.queue } : {}),
            ...(opts.verb ? { verbs: opts.verb } : {}),
            ...(opts.moveTo ? { move_to: opts.moveTo } : {}),
          },
        });
        if (wantsJson(cmd)) return printJson(out);
        say(`Updated ${out.slug} (${out.id}).`);
        say(`  Queues       ${out.queues.join(', ')}`);
        say(`  Verbs        ${out.verbs.join(', ')}`);
      },
    );

  withUrl(endpoints.command('revoke'))
    .description('revoke an endpoint: its token, MCP sessions and todo pushes stop working')
    .argument('<ref>', 'the endpoint slug or ep_ id')
    .option('--json', 'machine-readable JSON output')
    .action(async (ref: string, _opts, cmd: Command) => {
      const api = clientFor(cmd);
      const out = await api.request<EndpointOut>(
        'POST',
        `/api/v1/endpoints/${encodeURIComponent(ref)}/revoke`,
      );
      if (wantsJson(cmd)) return printJson(out);
      say(`Revoked ${out.slug} (${out.id}).`);
    });
}
