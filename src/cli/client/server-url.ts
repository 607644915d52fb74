import type { Command } from 'commander';
import { CliExit, CONFIG_EXIT, loadCliConfig } from '../support.ts';

/**
 * The server a client command talks to: `--url`, else the global `--server`, else HOOKLINE_URL
 * (or HOOKLINE_SERVER), else the address this machine's own configuration gives (by default
 * http://127.0.0.1:8080).
 *
 * An address that is not an http(s) URL is the caller's mistake, said as such: given as a flag it
 * is a usage error (exit 1, code `usage`); given as a variable it is invalid configuration (exit 2).
 */
export function clientServerUrl(cmd: Command, env: NodeJS.ProcessEnv = process.env): string {
  const { raw, from } = chosenServer(cmd, env);
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    const message = `hookline: ${from} must be an http:// or https:// address (for example http://127.0.0.1:8080), got ${JSON.stringify(raw)}`;
    throw from.startsWith('--')
      ? new CliExit(message, 1, 'usage')
      : new CliExit(message, CONFIG_EXIT, 'invalid_configuration');
  }
  return url.toString().replace(/\/+$/, '');
}

/** The address as given, and where it came from (the flag or the variable that gave it). */
function chosenServer(cmd: Command, env: NodeJS.ProcessEnv): { raw: string; from: string } {
  // Commander fills the global --url from HOOKLINE_URL and --server from HOOKLINE_SERVER; its
  // source says which of the two gave the value (globals win over a command's own option, as in
  // optsWithGlobals).
  const opts = cmd.optsWithGlobals<{ url?: string; server?: string }>();
  if (opts.url !== undefined) {
    const viaEnv = cmd.getOptionValueSourceWithGlobals('url') === 'env';
    return { raw: opts.url, from: viaEnv ? 'HOOKLINE_URL' : '--url' };
  }
  if (opts.server !== undefined) {
    const viaEnv = cmd.getOptionValueSourceWithGlobals('server') === 'env';
    return { raw: opts.server, from: viaEnv ? 'HOOKLINE_SERVER' : '--server' };
  }
  if (env.HOOKLINE_URL !== undefined) return { raw: env.HOOKLINE_URL, from: 'HOOKLINE_URL' };
  if (env.HOOKLINE_SERVER !== undefined) return { raw: env.HOOKLINE_SERVER, from: 'HOOKLINE_SERVER' };
  return { raw: loadCliConfig(env).baseUrl, from: 'HOOKLINE_BASE_URL' };
}
