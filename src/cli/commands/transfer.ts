import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Writable } from 'node:stream';
import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import type { RebuildProgress } from '../../../projections/engine/types.ts';
import { CliExit, globalOptions, loadCliConfig } from '../support.ts';

/**
 * `hookline export` and `hookline import`: the whole event log as NDJSON (src/eventstore/transfer.ts),
 * to move a store between modes. Both open the store directly, in any mode.
 */

async function openRuntime() {
  // Loaded here, not at the top: `hookline --help` and the other commands need none of it.
  const { createLogger } = await import('../../logger.ts');
  const { createRuntime } = await import('../../runtime.ts');
  const config = loadCliConfig();
  const logger = createLogger({ logLevel: 'warn' }, process.stderr as never);
  return createRuntime(config, { logger, startProjections: false });
}

async function write(out: Writable, chunk: string): Promise<void> {
  if (!out.write(chunk)) await once(out, 'drain');
}

/** A bar on a terminal's stderr, nothing otherwise. */
function bar(label: string): SingleBar | undefined {
  if (!process.stderr.isTTY) return undefined;
  return new SingleBar({
    format: `${label} [{bar}] {percentage}% {value}/{total} {unit}`,
    hideCursor: true,
    stream: process.stderr,
  });
}

export function registerTransfer(program: Command): void {
  program
    .command('export')
    .description('write the whole event log as NDJSON (every stream, with revisions, ids and times)')
    .option('-o, --output <file>', 'write to this file instead of standard output')
    .action(async (options: { output?: string }, cmd: Command) => {
      const { exportLog } = await import('../../eventstore/transfer.ts');
      const runtime = await openRuntime();
      const out: Writable = options.output
        ? createWriteStream(options.output, { mode: 0o600 })
        : process.stdout;
      let count = 0;
      try {
        count = await exportLog(runtime.store, (chunk) => write(out, chunk));
      } finally {
        await runtime.close();
      }
      if (options.output) {
        out.end();
        await once(out, 'finish');
        const summary = { exported: count, file: options.output };
        process.stderr.write(
          globalOptions(cmd).json
            ? `${JSON.stringify(summary)}\n`
            : `exported ${count} events to ${options.output}\n`,
        );
      }
    });

  program
    .command('import')
    .argument('<file>', 'an export of `hookline export`, or - for standard input')
    .description('read an export into an empty store of any mode, then rebuild every read model')
    .action(async (file: string, _options: unknown, cmd: Command) => {
      const json = globalOptions(cmd).json;
      const { importLog, ImportError } = await import('../../eventstore/transfer.ts');
      const input = file === '-' ? process.stdin : createReadStream(file);
      const size =
        file === '-'
          ? 0
          : await stat(file).then(
              (s) => s.size,
              () => 0,
            );
      const runtime = await openRuntime();
      try {
        const reading = size > 0 ? bar('import ') : undefined;
        reading?.start(size, 0, { unit: 'bytes' });
        let events: number;
        try {
          events = await importLog(
            { store: runtime.store, sql: runtime.sql },
            createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY }),
            (p) => {
              reading?.update(Math.min(p.bytes, size));
              if (json)
                process.stdout.write(
                  `${JSON.stringify({ type: 'import', events: p.events, bytes: p.bytes })}\n`,
                );
            },
          );
        } catch (err) {
          if (err instanceof ImportError) throw new CliExit(`hookline import: ${err.message}`);
          throw err;
        } finally {
          reading?.stop();
        }
        if (!json) process.stderr.write(`imported ${events} events; rebuilding the read models\n`);
        // The read models are empty: each is rebuilt from the imported log, as `projections rebuild`.
        for (const s of await runtime.projections.status()) {
          const rebuilding = bar(s.name.padEnd(16));
          let started = false;
          await runtime.projections.rebuild(s.name, (p: RebuildProgress) => {
            if (json) {
              process.stdout.write(
                `${JSON.stringify({ type: 'rebuild', name: p.name, done: p.done, total: p.total })}\n`,
              );
              return;
            }
            if (!started) rebuilding?.start(p.total, 0, { unit: 'events' });
            started = true;
            rebuilding?.update(p.done);
          });
          rebuilding?.stop();
        }
        if (json) process.stdout.write(`${JSON.stringify({ type: 'done', events })}\n`);
        else process.stderr.write(`done: ${events} events imported, every read model rebuilt\n`);
      } finally {
        await runtime.close();
      }
    });
}
