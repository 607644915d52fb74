import type { Command } from 'commander';
import { createCredentialStore } from './credentials.ts';
import { createApiClient } from './http.ts';
import { clientServerUrl } from './server-url.ts';

/** The API client for a command: its server (flag, environment or default) and the stored sign-in. */
export function clientFor(cmd: Command) {
  // clientServerUrl's errors are CliExits already (usage, or invalid configuration with exit 2).
  const server = clientServerUrl(cmd);
  return createApiClient({ server, store: createCredentialStore() });
}

export const wantsJson = (cmd: Command): boolean => Boolean(cmd.optsWithGlobals<{ json?: boolean }>().json);

/** `--url` on every client command (the global `--server` and HOOKLINE_URL work too). */
export function withUrl(cmd: Command): Command {
  return cmd.option(
    '--url <url>',
    'hookline server address (default: HOOKLINE_URL or http://127.0.0.1:8080)',
  );
}
