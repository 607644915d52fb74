import { Command, CommanderError, Option } from 'commander';
import { registerAgents } from './commands/agents.ts';
import { registerEndpoints } from './commands/endpoints.ts';
import { registerEvents } from './commands/events.ts';
import { registerForward } from './commands/forward.ts';
import { registerFriends } from './commands/friends.ts';
import { registerLogin } from './commands/login.ts';
import { registerLogout } from './commands/logout.ts';
import { registerMigrate } from './commands/migrate.ts';
import { registerProjections } from './commands/projections.ts';
import { registerProviders } from './commands/providers.ts';
import { registerServe } from './commands/serve.ts';
import { registerTodos } from './commands/todos.ts';
import { registerTransfer } from './commands/transfer.ts';
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
  registerTransfer(program);
  registerLogin(program);
  registerLogout(program);
  registerWhoami(program);
  registerVersion(program);
  registerAgents(program);
  registerEndpoints(program);
  registerFriends(program);
  registerTodos(program);
  registerProviders(program);
  registerEvents(program);
  registerForward(program);

  return program;
}

/**
 * How a failure is written: one line for a person, or with `--json` one JSON object on stderr
 * (`{"error":{"code","message","exit_code"}}`), so a script reads its errors as it reads its output.
 */
function reportFailure(json: boolean, code: string, message: string, exitCode: number): void {
  process.exitCode = exitCode;
  if (!json) {
    process.stderr.write(`${message}\n`);
    return;
  }
  const text = message.replace(/^hookline: /, '');
  process.stderr.write(`${JSON.stringify({ error: { code, message: text, exit_code: exitCode } })}\n`);
}

/** Runs the program; failures print one message and set the exit code (no stack for expected ones). */
export async function main(argv: readonly string[]): Promise<void> {
  const json = argv.includes('--json');
  const program = buildProgram();
  if (json) {
    // Commander's own errors (an unknown option, a missing argument) as JSON too, on every
    // command: subcommands copy the output settings only when they are created.
    const everyCommand = (c: Command): Command[] => [c, ...c.commands.flatMap(everyCommand)];
    for (const c of everyCommand(program)) {
      c.showHelpAfterError(false);
      c.configureOutput({
        outputError: (text) => reportFailure(true, 'usage', text.trim().split('\n')[0] ?? text, 1),
      });
    }
  }
  warnUnknownVariables();
  try {
    await program.parseAsync([...argv]);
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and --version end here too, with exit code 0; commander already printed.
      process.exitCode = err.exitCode;
      return;
    }
    if (err instanceof CliExit) return reportFailure(json, err.code, err.message, err.exitCode);
    const sentence = describeStartupError(err, configIfValid());
    if (sentence) return reportFailure(json, 'cannot_start', sentence, 1);
    if (json) return reportFailure(true, 'internal', err instanceof Error ? err.message : String(err), 1);
    process.stderr.write(`hookline: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  }
}
