import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import type { ProjectionStatus, RebuildProgress } from '../../../projections/engine/types.ts';
import type { Config } from '../../config.ts';
import { isHooklineError } from '../../errors.ts';
import { CliExit, globalOptions, loadCliConfig } from '../support.ts';

/** Where the commands act: the running server's admin routes, or the database opened here. */
interface Backend {
  readonly via: string;
  status(): Promise<ProjectionStatus[]>;
  rebuild(
    name: string,
    onProgress: (p: RebuildProgress) => void,
    onDone: (name: string) => void,
  ): Promise<void>;
  close(): Promise<void>;
}

async function problemExit(res: Response, what: string): Promise<CliExit> {
  const body = (await res.json().catch(() => ({}))) as { detail?: string; title?: string };
  return new CliExit(
    `hookline projections ${what}: ${body.detail ?? body.title ?? `the server answered ${res.status}`}`,
  );
}

function httpBackend(base: string): Backend {
  const call = async (path: string, init: RequestInit, what: string): Promise<Response> => {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, init);
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
      throw new CliExit(`hookline projections ${what}: the server at ${base} did not answer (${cause})`);
    }
    if (!res.ok) throw await problemExit(res, what);
    return res;
  };
  return {
    via: base,
    status: async () => {
      const res = await call('/admin/projections', {}, 'status');
      return ((await res.json()) as { projections: ProjectionStatus[] }).projections;
    },
    rebuild: async (name, onProgress, onDone) => {
      const res = await call(
        `/admin/projections/${encodeURIComponent(name)}/rebuild`,
        { method: 'POST' },
        'rebuild',
      );
      const decoder = new TextDecoder();
      let buffered = '';
      const handle = (line: string) => {
        const msg = JSON.parse(line) as {
          type: string;
          name: string;
          problem?: { detail?: string };
        } & RebuildProgress;
        if (msg.type === 'progress') onProgress(msg);
        else if (msg.type === 'done') onDone(msg.name);
        else if (msg.type === 'error') {
          throw new CliExit(`hookline projections rebuild ${msg.name}: ${msg.problem?.detail ?? 'failed'}`);
        }
      };
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffered += decoder.decode(chunk, { stream: true });
        for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          if (line) handle(line);
        }
      }
      if (buffered.trim()) handle(buffered.trim());
    },
    close: async () => {},
  };
}

async function directBackend(config: Config): Promise<Backend> {
  // Loaded here, not at the top: `hookline --help` and the other commands need none of it.
  const { createLogger } = await import('../../logger.ts');
  const { createRuntime } = await import('../../runtime.ts');
  const logger = createLogger({ logLevel: 'warn' }, process.stderr as never);
  const runtime = await createRuntime(config, { logger, startProjections: false });
  const { projections } = runtime;
  return {
    via: config.mode === 'embedded' ? config.dataDir : 'the database',
    status: () => projections.status(),
    rebuild: async (name, onProgress, onDone) => {
      const names = name === 'all' ? (await projections.status()).map((s) => s.name) : [name];
      for (const n of names) {
        try {
          await projections.rebuild(n, onProgress);
        } catch (err) {
          if (isHooklineError(err)) throw new CliExit(`hookline projections rebuild ${n}: ${err.message}`);
          throw err;
        }
        onDone(n);
      }
    },
    close: () => runtime.close(),
  };
}

/**
 * With --server the commands go through that server's admin routes; otherwise they open the
 * database here, in every mode (in embedded mode through the data directory's PostgreSQL, shared
 * with a server running on it). The checkpoint's compare-and-set keeps a rebuild here and a
 * server's live workers from stepping on each other.
 */
async function openBackend(cmd: Command): Promise<Backend> {
  const explicit = globalOptions(cmd).server;
  if (explicit) return httpBackend(explicit.replace(/\/+$/, ''));
  return directBackend(loadCliConfig());
}

/** What `--json` prints of a read model: snake_case keys, as every other `--json` of the CLI. */
const statusOut = (s: ProjectionStatus) => ({
  name: s.name,
  version: s.version,
  live_version: s.liveVersion ?? null,
  state: s.state,
  position: s.position,
  lag_events: s.lagEvents,
  lag_seconds: s.lagSeconds,
  updated_at: s.updatedAt,
});

const progressOut = (p: RebuildProgress) => ({
  type: 'progress',
  name: p.name,
  done: p.done,
  total: p.total,
  rate_per_second: p.ratePerSecond,
  eta_seconds: p.etaSeconds,
});

const seconds = (s: number | null) =>
  s === null ? '?' : s < 60 ? `${s.toFixed(0)}s` : `${Math.floor(s / 60)}m${Math.round(s % 60)}s`;

function printStatusTable(rows: readonly ProjectionStatus[]): void {
  const cells = rows.map((s) => [
    s.name,
    s.liveVersion !== undefined && s.liveVersion !== null && s.liveVersion !== s.version
      ? `${s.liveVersion}->${s.version}`
      : String(s.version),
    s.state,
    s.position,
    String(s.lagEvents),
    s.lagSeconds.toFixed(1),
    s.updatedAt ?? '-',
  ]);
  const head = ['NAME', 'VERSION', 'STATE', 'POSITION', 'LAG EVENTS', 'LAG SECONDS', 'UPDATED'];
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${[line(head), ...cells.map(line)].join('\n')}\n`);
}

/** A bar on a terminal (done/total, rate, ETA); a line per projection otherwise; NDJSON with --json. */
function rebuildReporter(json: boolean) {
  const tty = process.stderr.isTTY === true && !json;
  let bar: SingleBar | undefined;
  let current: RebuildProgress | undefined;
  const started = new Map<string, number>();
  return {
    progress: (p: RebuildProgress) => {
      if (!started.has(p.name)) started.set(p.name, Date.now());
      current = p;
      if (json) {
        process.stdout.write(`${JSON.stringify(progressOut(p))}\n`);
        return;
      }
      if (!tty) return;
      const payload = { name: p.name, rate: Math.round(p.ratePerSecond), etaText: seconds(p.etaSeconds) };
      if (!bar) {
        bar = new SingleBar({
          format: '{name} [{bar}] {value}/{total} events | {rate} events/s | ETA {etaText}',
          hideCursor: true,
          stream: process.stderr,
        });
        bar.start(p.total, p.done, payload);
      } else {
        bar.setTotal(p.total);
        bar.update(p.done, payload);
      }
    },
    done: (name: string) => {
      bar?.stop();
      bar = undefined;
      const elapsedMs = Date.now() - (started.get(name) ?? Date.now());
      const events = current?.name === name ? current.done : 0;
      if (json) {
        process.stdout.write(`${JSON.stringify({ type: 'done', name, events, elapsed_ms: elapsedMs })}\n`);
      } else
        process.stdout.write(`rebuilt ${name}: ${events} events in ${(elapsedMs / 1000).toFixed(1)} s\n`);
    },
    fail: () => {
      bar?.stop();
      bar = undefined;
    },
  };
}

/** `hookline projections status|rebuild`: checkpoints and lag of the read models, and rebuilds from the log. */
export function registerProjections(program: Command): void {
  const group = program
    .command('projections')
    .description('read models: checkpoints and lag, rebuild from the event log');

  group
    .command('status')
    .description('show each read model: version, state, checkpoint, lag in events and seconds')
    .action(async (_options: unknown, cmd: Command) => {
      const backend = await openBackend(cmd);
      try {
        const rows = await backend.status();
        if (globalOptions(cmd).json)
          process.stdout.write(`${JSON.stringify({ projections: rows.map(statusOut) }, null, 2)}\n`);
        else printStatusTable(rows);
      } finally {
        await backend.close();
      }
    });

  group
    .command('rebuild')
    .argument('<name>', 'a read model (see `hookline projections status`), or `all`')
    .description('replay the log into fresh tables while the old ones keep serving, then swap them in')
    .action(async (name: string, _options: unknown, cmd: Command) => {
      const json = globalOptions(cmd).json;
      const backend = await openBackend(cmd);
      const reporter = rebuildReporter(json);
      try {
        await backend.rebuild(name, reporter.progress, reporter.done);
      } catch (err) {
        reporter.fail();
        throw err;
      } finally {
        await backend.close();
      }
    });
}
