import { Command, CommanderError, Option } from 'commander';
import { packageVersion } from './package.ts';
import { describeStartupError } from './startup-errors.ts';
import { CliExit, configIfValid, warnUnknownVariables } from './support.ts';

/** Each command group's module (src/cli/commands/<group>.ts), in the order `--help` lists them. */
const GROUPS: readonly (() => Promise<(program: Command) => void>)[] = [
  () => import('./commands/serve.ts').then((m) => m.registerServe),
  () => import('./commands/migrate.ts').then((m) => m.registerMigrate),
  () => import('./commands/projections.ts').then((m) => m.registerProjections),
  () => import('./commands/transfer.ts').then((m) => m.registerTransfer),
  () => import('./commands/login.ts').then((m) => m.registerLogin),
  () => import('./commands/logout.ts').then((m) => m.registerLogout),
  () => import('./commands/whoami.ts').then((m) => m.registerWhoami),
  () => import('./commands/version.ts').then((m) => m.registerVersion),
  () => import('./commands/agents.ts').then((m) => m.registerAgents),
  () => import('./commands/endpoints.ts').then((m) => m.registerEndpoints),
  () => import('./commands/friends.ts').then((m) => m.registerFriends),
  () => import('./commands/todos.ts').then((m) => m.registerTodos),
  () => import('./commands/providers.ts').then((m) => m.registerProviders),
  () => import('./commands/events.ts').then((m) => m.registerEvents),
  () => import('./commands/forward.ts').then((m) => m.registerForward),
];

/**
 * The `hookline` program: global options here, each command group in src/cli/commands/<group>.ts.
 * `hookline serve` as the first argument (npm start, the Dockerfile) builds the program with its
 * own command alone: the other groups' modules (the API client, oauth4webapi, cli-progress) took
 * about 75 ms of CPU on every start's serial path, before PostgreSQL was spawned (bench/README.md,
 * "Where hookline's peak under ingest goes"). Anything else, `--help` included, gets every group.
 */
export async function buildProgram(argv: readonly string[] = []): Promise<Command> {
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

  const groups = argv[2] === 'serve' ? GROUPS.slice(0, 1) : GROUPS;
  for (const register of await Promise.all(groups.map((load) => load()))) register(program);

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
  const program = await buildProgram(argv);
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
