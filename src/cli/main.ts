import { Command, CommanderError, Option } from 'commander';
import { registerAgents } from './commands/agents.ts';
import { registerEndpoints } from './commands/endpoints.ts';
import { registerEvents } from './commands/events.ts';
import { registerLogin } from './commands/login.ts';
import { registerLogout } from './commands/logout.ts';
import { registerMigrate } from './commands/migrate.ts';
import { registerProjections } from './commands/projections.ts';
import { registerProviders } from './commands/providers.ts';
import { registerServe } from './commands/serve.ts';
import { registerTodos } from './commands/todos.ts';
import { registerVersion } from './commands/version.ts';
import { registerWhoami } from './commands/whoami.ts';
import { packageVersion } from './package.ts';
import { describeStartupError } from './startup-errors.ts';
import { CliExit, configIfValid, warnUnknownVariables } from './support.ts';

/** The `hookline` program: global options here, each command group in src/cli/commands/<group>.ts. */
export function buildProgram(): Command {
  const program = new Command('hookline')
    .description(
      'Self-hosted webhook inbox: verified deliveries, an append-only event log, todos for AI agents.',
    )
    .version(packageVersion(), '-V, --version', 'print the hookline version')
    .addOption(
      new Option(
        '--url <url>',
        'base URL of the hookline server (default: HOOKLINE_URL, else http://127.0.0.1:8080)',
      ).env('HOOKLINE_URL'),
    )
    // Kept for scripts written against the first name of the option.
    .addOption(new Option('--server <url>').env('HOOKLINE_SERVER').hideHelp())
    .option('--json', 'machine-readable JSON output', false)
    .showHelpAfterError('(run hookline --help for usage)')
    .exitOverride();

  // Command groups (one line each):
  registerServe(program);
  registerMigrate(program);
  registerProjections(program);
  registerLogin(program);
  registerLogout(program);
  registerWhoami(program);
  registerVersion(program);
  registerAgents(program);
  registerEndpoints(program);
  registerTodos(program);
  registerProviders(program);
  registerEvents(program);

  return program;
}

/** Runs the program; failures print one message and set the exit code (no stack for expected ones). */
export async function main(argv: readonly string[]): Promise<void> {
  const program = buildProgram();
  warnUnknownVariables();
  try {
    await program.parseAsync([...argv]);
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and --version end here too, with exit code 0; commander already printed.
      process.exitCode = err.exitCode;
      return;
    }
    if (err instanceof CliExit) {
      process.stderr.write(`${err.message}\n`);
      process.exitCode = err.exitCode;
      return;
    }
    const sentence = describeStartupError(err, configIfValid());
    if (sentence) {
      process.stderr.write(`${sentence}\n`);
      process.exitCode = 1;
      return;
    }
    process.stderr.write(`hookline: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  }
}
