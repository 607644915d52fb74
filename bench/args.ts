/**
 * The benchmarks' command lines: node's parseArgs, strict, with `--help` printed from the same
 * table the options are parsed from, so that what `--help` lists is what the benchmark takes.
 * An unknown option is refused with the usage and exit code 2.
 */
import { parseArgs } from 'node:util';

export interface BenchOption {
  readonly type: 'string' | 'boolean';
  readonly default?: string | boolean;
  /** The value's placeholder in --help (`N`, `DIR`, `LIST`). */
  readonly value?: string;
  /** What it does, for --help. An option without one is the benchmark's own (a child process's role). */
  readonly describe?: string;
}

export interface BenchUsage {
  /** The npm script, `bench:store`. */
  readonly script: string;
  /** One paragraph: what the benchmark measures and prints. */
  readonly summary: string;
  /** Environment variables it reads, with what each does. */
  readonly environment?: Readonly<Record<string, string>>;
}

type Values<T extends Record<string, BenchOption>> = {
  -readonly [K in keyof T]: T[K] extends { type: 'boolean' }
    ? boolean
    : T[K] extends { default: string }
      ? string
      : string | undefined;
};

export const PG_URL_HELP =
  'admin URL of the PostgreSQL server the scratch databases are made on (default postgres://postgres@127.0.0.1:5432/postgres)';

/** The --help text. */
export function benchUsage(usage: BenchUsage, options: Readonly<Record<string, BenchOption>>): string {
  const rows: [string, string][] = [];
  for (const [name, o] of Object.entries(options)) {
    if (o.describe === undefined) continue;
    const flag = o.type === 'boolean' ? `--${name}` : `--${name} ${o.value ?? 'VALUE'}`;
    const fallback = o.type === 'string' && o.default !== undefined ? ` (default ${o.default})` : '';
    rows.push([flag, `${o.describe}${fallback}`]);
  }
  rows.push(['-h, --help', 'this text']);
  const width = Math.max(...rows.map(([flag]) => flag.length)) + 2;
  const lines = [
    `Usage: npm run ${usage.script} -- [options]`,
    '',
    usage.summary,
    '',
    'Options:',
    ...rows.map(([flag, text]) => `  ${flag.padEnd(width)}${text}`),
  ];
  const env = Object.entries(usage.environment ?? {});
  if (env.length > 0) {
    const envWidth = Math.max(...env.map(([name]) => name.length)) + 2;
    lines.push('', 'Environment:', ...env.map(([name, text]) => `  ${name.padEnd(envWidth)}${text}`));
  }
  lines.push('', 'Figures and how to read them: bench/README.md.');
  return `${lines.join('\n')}\n`;
}

/** Parses process.argv; prints --help and exits 0, or the error and the usage and exits 2. */
export function benchArgs<const T extends Record<string, BenchOption>>(
  usage: BenchUsage,
  options: T,
): Values<T> {
  const config: Record<string, { type: 'string' | 'boolean'; default?: string | boolean }> = {};
  for (const [name, o] of Object.entries(options)) {
    config[name] = o.default === undefined ? { type: o.type } : { type: o.type, default: o.default };
  }
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: process.argv.slice(2),
      options: { ...config, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }) as { values: Record<string, string | boolean | undefined> });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${benchUsage(usage, options)}`);
    process.exit(2);
  }
  if (values.help) {
    process.stdout.write(benchUsage(usage, options));
    process.exit(0);
  }
  delete values.help;
  return values as Values<T>;
}
