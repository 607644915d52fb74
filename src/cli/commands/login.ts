import { type Command, InvalidArgumentError, Option } from 'commander';
import { unreachable } from '../client/http.ts';
import { clientFor, wantsJson, withUrl } from '../client/index.ts';
import { LoginError, login } from '../client/oauth.ts';
import { printJson, say, warn } from '../client/output.ts';
import { CliExit } from '../support.ts';

const intIn = (min: number, max: number, what: string) => (raw: string) => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new InvalidArgumentError(`${what} must be ${min}-${max}`);
  return n;
};

/** `hookline login`: sign in in the browser; the CLI keeps the rotating token pair. */
export function registerLogin(program: Command): void {
  withUrl(program.command('login'))
    .description('sign in to a hookline server in your browser and keep the token pair (mode 0600)')
    .option('--no-open', 'print the sign-in URL instead of opening a browser')
    .addOption(
      new Option('--port <port>', 'loopback port the browser returns to')
        .argParser(intIn(0, 65535, 'port'))
        .default(0, 'any free port'),
    )
    .option('--timeout <seconds>', 'how long to wait for the browser', intIn(10, 3600, 'timeout'), 300)
    .action(async (opts: { open: boolean; port: number; timeout: number }, cmd: Command) => {
      const api = clientFor(cmd);
      let credentials: Awaited<ReturnType<typeof login>>;
      try {
        credentials = await login(api.server, {
          port: opts.port,
          timeoutMs: opts.timeout * 1000,
          present: async (url) => {
            warn(`To sign in to ${api.server}, open this URL in a browser:\n\n  ${url}\n`);
            if (opts.open) {
              // Loaded here: the other commands and `hookline serve` do not need it (12 modules).
              const { default: open } = await import('open');
              await open(url).then(
                (child) => child.on('error', () => warn('(could not open a browser; open the URL yourself)')),
                () => warn('(could not open a browser; open the URL yourself)'),
              );
            }
            warn('Waiting for the browser to come back…');
          },
        });
      } catch (err) {
        if (err instanceof LoginError) throw new CliExit(`hookline: ${err.message}`);
        if (err instanceof TypeError) throw unreachable(api.server, err);
        throw err;
      }
      const saved = { ...credentials, operator: null, saved_at: new Date().toISOString() };
      await api.store.put(api.server, saved);
      const me = await api.request<{ operator: string }>('GET', '/api/v1/me');
      await api.store.put(api.server, { ...saved, operator: me.operator });
      if (wantsJson(cmd)) {
        printJson({ server: api.server, operator: me.operator, credentials: api.store.file });
        return;
      }
      say(`Signed in to ${api.server} as ${me.operator}.`);
      const minutes = Math.round((credentials.expires_at - Date.now()) / 60_000);
      say(
        `Access tokens last ${minutes} minutes and refresh on their own; the pair is kept in ${api.store.file}.`,
      );
    });
}
