import type { Command } from 'commander';
import { clientFor, wantsJson, withUrl } from '../client/index.ts';
import { revoke } from '../client/oauth.ts';
import { printJson, say, warn } from '../client/output.ts';

/** `hookline logout`: revokes the sign-in at the server and forgets the token pair. */
export function registerLogout(program: Command): void {
  withUrl(program.command('logout'))
    .description('sign out: revoke the refresh token at the server and delete it here')
    .action(async (_opts, cmd: Command) => {
      const api = clientFor(cmd);
      const stored = await api.store.get(api.server);
      let revoked = false;
      if (stored) {
        try {
          revoked = await revoke(stored);
        } catch (err) {
          warn(
            `(could not revoke the sign-in at ${api.server}: ${(err as Error).message}; it ends when it expires)`,
          );
        }
        await api.store.remove(api.server);
      }
      if (wantsJson(cmd)) {
        printJson({ server: api.server, signed_out: Boolean(stored), revoked });
        return;
      }
      say(stored ? `Signed out of ${api.server}.` : `Not signed in to ${api.server}; nothing to do.`);
    });
}
