import type { Command } from 'commander';
import { clientFor, wantsJson, withUrl } from '../client/index.ts';
import { printJson, say } from '../client/output.ts';

/** `hookline whoami`: who the stored sign-in acts for, as the server sees it. */
export function registerWhoami(program: Command): void {
  withUrl(program.command('whoami'))
    .description('show who you are signed in as')
    .action(async (_opts, cmd: Command) => {
      const api = clientFor(cmd);
      const me = await api.request<{ operator: string; client_id: string; scope: string }>(
        'GET',
        '/api/v1/me',
      );
      const stored = await api.stored();
      if (wantsJson(cmd)) {
        printJson({
          server: api.server,
          ...me,
          access_token_expires_at: new Date(stored.expires_at).toISOString(),
        });
        return;
      }
      say(`${me.operator} at ${api.server}`);
    });
}
