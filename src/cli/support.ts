import type { Command } from 'commander';
import { type Config, ConfigError, loadConfig, unknownVariables } from '../config.ts';
import { packageVersion } from './package.ts';

/** Global options of the `hookline` program (declared in main.ts); read with `globalOptions(cmd)`. */
export interface GlobalOptions {
  /** Base URL of the hookline server that client commands talk to (`--url` / HOOKLINE_URL). */
  readonly url?: string;
  /** The same, under its earlier name `--server` / HOOKLINE_SERVER. */
  readonly server?: string;
  /** Machine-readable output. */
  readonly json: boolean;
}

export const globalOptions = (cmd: Command): GlobalOptions => cmd.optsWithGlobals<GlobalOptions>();

/** A failure the CLI reports in one message and an exit code, without a stack trace. */
export class CliExit extends Error {
  readonly exitCode: number;
  /** A stable word for scripts (`--json` errors): not_signed_in, unreachable, a problem's code, … */
  readonly code: string;
  constructor(message: string, exitCode = 1, code = exitCode === 2 ? 'invalid_configuration' : 'failed') {
    super(message);
    this.name = 'CliExit';
    this.exitCode = exitCode;
    this.code = code;
  }
}

/** Exit code of a configuration error: distinct from 1 so scripts can tell "fix your env" apart. */
export const CONFIG_EXIT = 2;

let warned = false;

/**
 * One warning line per HOOKLINE_* variable that hookline does not read, naming the closest one it
 * does (a typo such as HOOKLINE_PROT). Once per process.
 */
export function warnUnknownVariables(env: NodeJS.ProcessEnv = process.env): void {
  if (warned) return;
  warned = true;
  for (const { name, closest } of unknownVariables(env)) {
    process.stderr.write(
      `hookline: warning: ${name} is not a variable hookline reads, and is ignored${closest ? `; did you mean ${closest}?` : ' (docs/reference/configuration.md lists them)'}\n`,
    );
  }
}

/** The server's frozen Config from the environment; a bad value becomes exit 2 listing the issues. */
export function loadCliConfig(env: NodeJS.ProcessEnv = process.env): Config {
  warnUnknownVariables(env);
  try {
    return loadConfig(env, packageVersion());
  } catch (err) {
    if (err instanceof ConfigError) {
      throw new CliExit(`hookline: ${err.message}`, CONFIG_EXIT);
    }
    throw err;
  }
}

/**
 * The server a client command talks to: `--url` (HOOKLINE_URL) or `--server`, else the base URL the
 * server's own configuration gives on this machine (HOOKLINE_BASE_URL or host:port).
 */
export function serverUrl(cmd: Command): string {
  const { url, server } = globalOptions(cmd);
  const explicit = url ?? server;
  if (explicit) return explicit.replace(/\/+$/, '');
  return loadCliConfig().baseUrl;
}

/** The configuration when the environment gives a valid one (to word an error), else undefined. */
export function configIfValid(env: NodeJS.ProcessEnv = process.env): Config | undefined {
  try {
    return loadConfig(env, packageVersion());
  } catch {
    return undefined;
  }
}
