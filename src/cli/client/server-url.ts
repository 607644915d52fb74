import type { Command } from 'commander';
import { globalOptions, loadCliConfig } from '../support.ts';

/**
 * The server a client command talks to: `--url`, else the global `--server`, else HOOKLINE_URL
 * (or HOOKLINE_SERVER), else the address this machine's own configuration gives (by default
 * http://127.0.0.1:8080).
 */
export function clientServerUrl(cmd: Command, env: NodeJS.ProcessEnv = process.env): string {
  const opts = cmd.optsWithGlobals<{ url?: string }>();
  const chosen =
    opts.url ??
    globalOptions(cmd).url ??
    globalOptions(cmd).server ??
    env.HOOKLINE_URL ??
    env.HOOKLINE_SERVER;
  const raw = chosen ?? loadCliConfig(env).baseUrl;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`not a server URL: ${JSON.stringify(raw)} (expected e.g. http://127.0.0.1:8080)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(`the server URL must be http:// or https://, got ${raw}`);
  }
  return url.toString().replace(/\/+$/, '');
}
