import type { Command } from 'commander';
import { clientFor, wantsJson, withUrl } from '../client/index.ts';
import { printJson, printTable, say } from '../client/output.ts';

interface ProviderView {
  name: string;
  kind?: string;
  family?: string;
  trust_mode: string;
  enabled: boolean;
  secret_status?: string;
  configured?: boolean;
  configure_with?: string | null;
  path?: string | null;
  channel?: string | null;
  ingest_url?: string | null;
  token?: string;
}

/** After a 404 of enable/disable: a bare name is most likely a generic provider's. */
function notFoundHint(verb: string, name: string): string {
  if (
    /^[a-z0-9][a-z0-9_-]{0,63}$/.test(name) &&
    !['codehost', 'payments', 'chat', 'operator'].includes(name)
  ) {
    return `generic providers are named generic:<name>: try \`hookline providers ${verb} generic:${name}\` (\`hookline providers list\` shows every name)`;
  }
  return '`hookline providers list` shows every provider name';
}

/**
 * `hookline providers list|add-generic|enable|disable`: the provider screen's routes (spec 4.7,
 * 4.8), asked for JSON. Like the screens they have no in-app authentication (spec 5).
 */
export function registerProviders(program: Command): void {
  const providers = program
    .command('providers')
    .description('webhook providers: list, add generic ones, toggle');

  withUrl(providers.command('list'))
    .description('list the configured providers')
    .option('--json', 'machine-readable JSON output')
    .action(async (_opts, cmd: Command) => {
      const api = clientFor(cmd);
      const rows = await api.request<ProviderView[]>('GET', '/providers', { authenticated: false });
      if (wantsJson(cmd)) return printJson(rows);
      if (rows.length === 0) return say('No providers configured.');
      printTable(
        rows.map((r) => ({
          ...r,
          enabled:
            r.configured === false ? `not configured: set ${r.configure_with}` : r.enabled ? 'yes' : 'no',
          where: r.path ?? r.channel,
        })),
        ['name', 'family', 'trust_mode', 'enabled', 'secret_status', 'where'],
      );
    });

  withUrl(providers.command('add-generic'))
    .description('create a generic webhook provider (disabled until you enable it); its token is shown once')
    .argument(
      '<name>',
      "1 to 64 lowercase letters, digits, '-' or '_' (such as ci); the provider is generic:<name>",
    )
    .option('--open', 'accept deliveries without a token (trusted networks only)')
    .option('--json', 'machine-readable JSON output (includes the token)')
    .action(async (name: string, opts: { open?: boolean }, cmd: Command) => {
      const api = clientFor(cmd);
      const out = await api.request<ProviderView>('POST', '/providers', {
        authenticated: false,
        form: { name, trust_mode: opts.open ? 'open' : 'token' },
      });
      if (wantsJson(cmd)) return printJson(out);
      say(`Created ${out.name} (${out.trust_mode}, ${out.enabled ? 'enabled' : 'disabled'}).`);
      if (out.ingest_url) say(`  Ingest URL   ${out.ingest_url}`);
      if (out.token) say(`  Token        ${out.token}   (shown only now; send it as Authorization: Bearer)`);
      if (!out.enabled) say(`Enable it with \`hookline providers enable ${out.name}\`.`);
    });

  for (const [verb, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    withUrl(providers.command(verb))
      .description(`${verb} a provider (a disabled one answers 403 to deliveries)`)
      .argument('<name>', 'provider name: codehost, payments, chat or generic:<name>')
      .option('--json', 'machine-readable JSON output')
      .action(async (name: string, _opts, cmd: Command) => {
        const api = clientFor(cmd);
        const out = await api.request<ProviderView>(
          'POST',
          `/providers/${encodeURIComponent(name)}/enabled`,
          {
            authenticated: false,
            form: { enabled: String(enabled) },
            notFoundHint: notFoundHint(verb, name),
          },
        );
        if (wantsJson(cmd)) return printJson(out);
        say(`${out.name} is ${out.enabled ? 'enabled' : 'disabled'}.`);
      });
  }
}
