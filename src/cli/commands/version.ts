import type { Command } from 'commander';
import { clientFor, wantsJson, withUrl } from '../client/index.ts';
import { printJson, say } from '../client/output.ts';
import { packageVersion } from '../package.ts';
import { CliExit } from '../support.ts';

/** `hookline version`: this client's version and the server's (spec 9), from GET /healthz. */
export function registerVersion(program: Command): void {
  withUrl(program.command('version'))
    .description("print the client's version and the server's")
    .action(async (_opts, cmd: Command) => {
      const api = clientFor(cmd);
      const client = packageVersion();
      let server: string | null = null;
      let problem: string | null = null;
      try {
        const res = await fetch(`${api.server}/healthz`, { headers: { accept: 'application/json' } });
        const body = (await res.json().catch(() => ({}))) as {
          version?: string;
          health?: { version?: string };
        };
        server = body.version ?? body.health?.version ?? null;
        if (!server) problem = `the server answered ${res.status} without a version`;
      } catch (err) {
        const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
        problem = `unreachable (${cause})`;
      }
      if (wantsJson(cmd))
        printJson({ client, server, url: api.server, ...(problem ? { error: problem } : {}) });
      else {
        say(`client ${client}`);
        say(server ? `server ${server} at ${api.server}` : `server at ${api.server}: ${problem}`);
      }
      if (server) return;
      if (wantsJson(cmd)) {
        process.exitCode = 1;
        return;
      }
      throw new CliExit(
        'hookline: start the server with `hookline serve`, or point the CLI at it with --url or HOOKLINE_URL',
      );
    });
}
