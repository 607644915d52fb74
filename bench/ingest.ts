/**
 * Signed-ingestion benchmark (design.md, "Targets"): a signed 1.5 KB codehost payload, 32
 * connections, against hookline on PostgreSQL, hookline embedded (its own PostgreSQL) and a bare Fastify route
 * that checks the same HMAC and persists nothing, in one run, with a minimal durable reference route
 * (bench/ingest-reference.ts). Each server runs in its own child process; autocannon drives it from
 * this one. Prints req/s, p50, p99, the ratios to the bare and the durable route, and per delivery
 * the CPU of the server and of its PostgreSQL backends, rows, WAL bytes and deliveries per commit.
 * Embedded mode's memory is sampled every `--memory-every` ms (default 1,000) on a worker thread
 * (bench/peak-sampler.ts), off the thread that drives the load.
 * `npm run bench:ingest` (`-- --help` for the options).
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type autocannon from 'autocannon';
import Fastify from 'fastify';
import { NODE_FLAGS } from '../src/cli/node-flags.ts';
import { benchArgs, PG_URL_HELP } from './args.ts';
import {
  backendCpu,
  backendsGone,
  cpuSeconds,
  type DatabaseCounters,
  databaseCounters,
  serveDurable,
  settled,
  signatureValid,
} from './ingest-reference.ts';
import { peakRssMb, postmasterOf, processTree } from './memory.ts';
import { prose } from './payload.ts';
import { sampleEmbeddedPeaks } from './peak-sampler.ts';
import { scratchDataDir } from './scratch-data-dir.ts';
import { BENCH_ADMIN_URL, createScratchDatabase } from './scratch-database.ts';
import { formatWriterStats, scrapeMetrics, type WriterStats, writerStats } from './writer-stats.ts';

const SECRET = 'bench-codehost-secret';
const SELF = fileURLToPath(import.meta.url);
/** `--node-flags "..."`: more flags for the servers' Node (memory experiments), after NODE_FLAGS. */
let extraNodeFlags: string[] = [];
let overallRate = 0;

type Target = 'bare' | 'durable' | 'postgres' | 'embedded';

/** A push-like codehost payload padded with prose (bench/payload.ts) to exactly 1,536 bytes. */
function payload(): string {
  const base = {
    ref: 'refs/heads/main',
    before: '6113728f27ae82c7b1a177c8d03f9e96e0adf246',
    after: '0000000000000000000000000000000000000000',
    repository: {
      id: 35129377,
      name: 'public-repo',
      full_name: 'baxterthehacker/public-repo',
      private: false,
    },
    pusher: { name: 'baxterthehacker', email: 'baxterthehacker@users.noreply.github.com' },
    commits: [
      {
        id: '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c',
        message: 'Update README.md',
        author: { name: 'baxter' },
      },
    ],
    padding: '',
  };
  const without = JSON.stringify(base).length;
  base.padding = prose(1536 - without);
  return JSON.stringify(base);
}

// ---- child: one server -------------------------------------------------------------------

async function serveBare(): Promise<number> {
  const app = Fastify({ logger: false });
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  app.post('/webhooks/codehost', async (request, reply) => {
    if (!signatureValid(request, SECRET)) return reply.code(401).send({ error: 'bad signature' });
    return reply.code(202).send({ ok: true });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as { port: number }).port;
}

async function serveHookline(): Promise<number> {
  const { loadConfig } = await import('../src/config.ts');
  const { createRuntime } = await import('../src/runtime.ts');
  const { buildApp } = await import('../src/app.ts');
  const config = loadConfig({
    ...process.env,
    HOOKLINE_CODEHOST_SECRET: SECRET,
    HOOKLINE_LOG_LEVEL: 'warn',
    HOOKLINE_HOST: '127.0.0.1',
    HOOKLINE_PORT: '0',
  });
  const { changeSettings } = await import('../src/settings/change.ts');
  const runtime = await createRuntime(config);
  // Retention off (0 = unlimited for both limits), as the targets are defined.
  await changeSettings(runtime, {
    type: 'ChangeSettings',
    values: { retention_max_rows: 0, retention_max_age_days: 0 },
    actor: 'bench',
  });
  const app = await buildApp(runtime, { requestLogging: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  process.once('SIGTERM', () => {
    void app
      .close()
      .then(() => runtime.close())
      .finally(() => process.exit(0));
  });
  return (app.server.address() as { port: number }).port;
}

// ---- parent: drive each target -----------------------------------------------------------

/**
 * An administrative connection string for embedded mode's own server (pg/hookline.json, its
 * socket), and the database hookline serves from there (`postgres` on a cluster it initialised
 * since 990371d, `hookline` on an older one): the file names it.
 */
async function managedServer(dataDir: string): Promise<{ adminUrl: string; database: string }> {
  const cluster = path.join(dataDir, 'pg');
  const { user, password, database } = JSON.parse(
    await readFile(path.join(cluster, 'hookline.json'), 'utf8'),
  ) as {
    user: string;
    password: string;
    database: string;
  };
  const lines = (await readFile(path.join(cluster, 'postmaster.pid'), 'utf8')).split('\n');
  const port = lines[3]!.trim();
  const socketDir = lines[4]!.trim();
  return {
    adminUrl: `postgresql://${encodeURIComponent(user)}:${encodeURIComponent(password)}@/postgres?host=${encodeURIComponent(socketDir)}&port=${port}`,
    database,
  };
}

function startChild(
  target: Target,
  env: Record<string, string>,
  profileDir?: string,
): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    // Every server, the bare one too, runs with the flags `hookline serve` runs with.
    const child = spawn(
      process.execPath,
      [
        ...NODE_FLAGS,
        ...extraNodeFlags,
        ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
        SELF,
        '--serve',
        target,
      ],
      {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /READY (\d+)/.exec(out);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`${target} server exited (${code}) before it was ready`)));
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

interface Figures {
  target: Target;
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
  /** The server's peak resident set (VmHWM), MB; undefined where /proc is not there. */
  peakRssMb?: number;
  /** Embedded: peaks of the sums over the managed PostgreSQL's processes (RSS and PSS), MB. */
  postgres?: { rssMb: number; pssMb: number };
  /** Embedded: peak of hookline's RSS plus its PostgreSQL's PSS, sampled together, MB. */
  totalMb?: number;
  /** Embedded: samples of the memory sampler and the CPU ms of its thread per sample. */
  sampler?: { samples: number; cpuMs: number };
  /** Cost per acknowledged delivery (see `Costs`); undefined where it could not be read. */
  costs?: Costs;
}

/**
 * What one acknowledged delivery cost. CPU is counted from after the warm-up until the database
 * has gone quiet after the run (projections caught up); the database counters from the server's
 * start until its backends have exited (they flush their statistics then), over every delivery
 * of warm-up and run.
 */
interface Costs {
  /** CPU ms of the server process (all its threads) per delivery. */
  nodeMs?: number;
  /** CPU ms of the PostgreSQL backends connected to the server's database per delivery. */
  postgresMs?: number;
  /** Embedded: CPU ms of every process of its own PostgreSQL (background processes too) per delivery. */
  postgresAllMs?: number;
  /** pg_stat_database.tup_inserted per delivery. */
  rows?: number;
  /** pg_current_wal_lsn() advance per delivery, bytes (cluster-wide: other writers count too). */
  walBytes?: number;
  /** Deliveries per pg_stat_database.xact_commit (every committed transaction, reads too). */
  perCommit?: number;
}

async function drive(
  target: Target,
  port: number,
  seconds: number,
  connections: number,
  body: string,
  deliveryIds: boolean,
) {
  const signature = `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`;
  const options: autocannon.Options = {
    url: `http://127.0.0.1:${port}/webhooks/codehost`,
    connections,
    // `--rate N`: N requests a second over all connections, so the targets are compared at the
    // same rate (and batching): their CPU per delivery then differs by the work alone.
    ...(overallRate > 0 ? { overallRate } : {}),
    duration: seconds,
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': signature,
      'x-github-event': 'push',
    },
    // A real sender names each delivery: every request carries a fresh id, so the dedup by
    // external id runs as in production (`--no-delivery-id` leaves it out, for comparison).
    requests: !deliveryIds
      ? [{}]
      : [
          {
            setupRequest: (req) => ({
              ...req,
              headers: { ...req.headers, 'x-github-delivery': randomUUID() },
            }),
          },
        ],
  };
  // Imported here, by the parent only: the servers are this same file, and a static import made
  // each of them load autocannon too (9 to 12 MB of hookline's RSS at idle that `hookline serve`
  // does not hold).
  const r = await (await import('autocannon')).default(options);
  return {
    target,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ok: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  } satisfies Figures;
}

const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** Median over the defined values, or undefined when there is none. */
function medianOf(xs: (number | undefined)[]): number | undefined {
  const defined = xs.filter((x): x is number => x !== undefined && Number.isFinite(x));
  return defined.length > 0 ? median(defined) : undefined;
}

/** CPU seconds so far of each process of embedded mode's own PostgreSQL (all of them, not only backends). */
function managedPostgresCpu(dataDir: string): Map<number, number> | undefined {
  const postmaster = postmasterOf(dataDir);
  if (postmaster === undefined) return undefined;
  const cpu = new Map<number, number>();
  for (const pid of processTree(postmaster)) {
    const seconds = cpuSeconds(pid);
    if (seconds !== undefined) cpu.set(pid, seconds);
  }
  return cpu;
}

const databaseOf = (url: string): string => decodeURIComponent(new URL(url).pathname.slice(1));

async function main(): Promise<void> {
  const values = benchArgs(
    {
      script: 'bench:ingest',
      summary:
        'A signed 1.5 KB codehost payload over 32 connections against a bare route, a minimal durable route, hookline on PostgreSQL and hookline embedded, each in a child process; req/s, p50, p99, the ratios, and per delivery the CPU of the server and of its PostgreSQL, rows, WAL bytes and deliveries a commit.',
      environment: { HOOKLINE_BENCH_PG_URL: PG_URL_HELP },
    },
    {
      serve: { type: 'string' }, // a child process's role
      seconds: { type: 'string', value: 'S', describe: 'seconds of load a target (default 10)' },
      duration: { type: 'string', value: 'S', describe: 'the same as --seconds' },
      rounds: {
        type: 'string',
        default: '1',
        value: 'N',
        describe: 'rounds, the targets in turn, in reverse order every other round; medians printed',
      },
      warmup: { type: 'string', default: '3', value: 'S', describe: 'seconds of unmeasured load first' },
      connections: { type: 'string', default: '32', value: 'N', describe: 'concurrent connections' },
      only: {
        type: 'string',
        default: 'bare,durable,postgres,embedded',
        value: 'LIST',
        describe: 'the targets run',
      },
      'no-delivery-id': { type: 'boolean', default: false, describe: 'send no delivery id (no dedup key)' },
      'cpu-prof': {
        type: 'string',
        value: 'DIR',
        describe: "the servers' V8 CPU profiles, to DIR/<target>-roundN",
      },
      'node-flags': {
        type: 'string',
        value: 'FLAGS',
        describe: "more flags for the servers' Node (--node-flags=--flag)",
      },
      rate: {
        type: 'string',
        default: '0',
        value: 'R',
        describe: 'requests a second over all connections; 0 as fast as they go',
      },
      'memory-every': {
        type: 'string',
        default: '1000',
        value: 'MS',
        describe: 'embedded: how often its memory is sampled',
      },
    },
  );

  if (values.serve) {
    const port =
      values.serve === 'bare'
        ? await serveBare()
        : values.serve === 'durable'
          ? await serveDurable(process.env.DATABASE_URL!, SECRET)
          : await serveHookline();
    process.stdout.write(`READY ${port}\n`);
    return;
  }
  extraNodeFlags = values['node-flags']?.split(/\s+/).filter(Boolean) ?? [];
  overallRate = Number(values.rate);
  const memoryEveryMs = Number(values['memory-every']);
  const seconds = Number(values.seconds ?? values.duration ?? '10');
  const rounds = Math.max(1, Number(values.rounds));
  const warmup = Number(values.warmup);
  const connections = Number(values.connections);
  const targets = values.only.split(',').map((t) => t.trim()) as Target[];
  const body = payload();
  const deliveryIds = !values['no-delivery-id'];
  console.log(
    `signed codehost payload of ${Buffer.byteLength(body)} bytes, ${connections} connections, ${seconds} s per target (+${warmup} s warm-up), ${rounds} round(s) with the targets in turn (reversed every other round), retention off`,
  );

  const load = () =>
    os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  console.log(`load average at start: ${load()} (${os.cpus().length} CPUs)`);
  const results: Figures[][] = [];
  for (let round = 0; round < rounds; round++) {
    const roundResults: Figures[] = [];
    results.push(roundResults);
    // Every other round runs the targets in the reverse order, so that no target always runs
    // first (on a fresh machine) or last (after the others have warmed the caches and the load).
    for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
      const env: Record<string, string> = {};
      let cleanup = async () => {};
      let database: string | undefined;
      if (target === 'postgres' || target === 'durable') {
        const scratch = await createScratchDatabase(target === 'durable' ? 'reference' : 'ingest');
        env.DATABASE_URL = scratch.url;
        database = databaseOf(scratch.url);
        cleanup = scratch.drop;
      } else if (target === 'embedded') {
        const dataDir = await scratchDataDir('ingest');
        env.HOOKLINE_DATA_DIR = dataDir.dir;
        cleanup = dataDir.remove;
      }
      try {
        const profileDir = values['cpu-prof']
          ? path.resolve(values['cpu-prof'], `${target}-round${round + 1}`)
          : undefined;
        const { child, port } = await startChild(target, env, profileDir);
        let figures: Figures;
        let warmupOk = 0;
        let start: DatabaseCounters | undefined;
        let end: DatabaseCounters | undefined;
        let cpu: { node?: number; postgres?: number; postgresAll?: number } = {};
        let writer: WriterStats | undefined;
        const dir = env.HOOKLINE_DATA_DIR;
        // Embedded mode's own server is read as the shared one is: through an administrative
        // connection (its socket and hookline's credentials), so both get the same settling.
        const managed = dir ? await managedServer(dir) : undefined;
        const adminUrl = managed?.adminUrl ?? BENCH_ADMIN_URL;
        if (managed) database = managed.database;
        try {
          if (database) start = await databaseCounters(adminUrl, database);
          if (warmup > 0) warmupOk = (await drive(target, port, warmup, connections, body, deliveryIds)).ok;
          if (database) await settled(adminUrl, database);
          const nodeBefore = child.pid === undefined ? undefined : cpuSeconds(child.pid);
          const pgBefore = database ? await databaseCounters(adminUrl, database) : undefined;
          const treeBefore = dir ? managedPostgresCpu(dir) : undefined;
          const peaks = dir && child.pid ? sampleEmbeddedPeaks(child.pid, dir, memoryEveryMs) : undefined;
          const hookline = target === 'postgres' || target === 'embedded';
          const metricsBefore = hookline ? await scrapeMetrics(`http://127.0.0.1:${port}`) : undefined;
          figures = await drive(target, port, seconds, connections, body, deliveryIds);
          if (metricsBefore !== undefined)
            writer = writerStats(metricsBefore, await scrapeMetrics(`http://127.0.0.1:${port}`));
          if (peaks) {
            const { postgres, totalMb, samples, meanSampleCpuMs } = await peaks.stop();
            figures.postgres = postgres;
            figures.totalMb = totalMb;
            figures.sampler = { samples, cpuMs: meanSampleCpuMs };
          }
          if (database) await settled(adminUrl, database);
          const nodeAfter = child.pid === undefined ? undefined : cpuSeconds(child.pid);
          const pgAfter = database ? await databaseCounters(adminUrl, database) : undefined;
          const treeAfter = dir ? managedPostgresCpu(dir) : undefined;
          cpu = {
            node: nodeBefore !== undefined && nodeAfter !== undefined ? nodeAfter - nodeBefore : undefined,
            postgres: pgBefore && pgAfter ? backendCpu(pgBefore.backends, pgAfter.backends) : undefined,
            postgresAll: treeBefore && treeAfter ? backendCpu(treeBefore, treeAfter) : undefined,
          };
          // The managed server stops with hookline: its counters are read now, backends still
          // connected (they report their statistics at least once a second).
          if (dir) end = pgAfter;
          figures.peakRssMb = child.pid === undefined ? undefined : peakRssMb(child.pid);
        } finally {
          await stopChild(child);
        }
        const costs: Costs = {
          nodeMs: cpu.node === undefined ? undefined : (cpu.node * 1000) / figures.ok,
          postgresMs: cpu.postgres === undefined ? undefined : (cpu.postgres * 1000) / figures.ok,
          postgresAllMs: cpu.postgresAll === undefined ? undefined : (cpu.postgresAll * 1000) / figures.ok,
        };
        if (database && start) {
          if (!end) {
            await backendsGone(adminUrl, database);
            end = await databaseCounters(adminUrl, database);
          }
          const delivered = warmupOk + figures.ok;
          costs.rows = (end.tupInserted - start.tupInserted) / delivered;
          costs.walBytes = Number(end.walBytes - start.walBytes) / delivered;
          costs.perCommit = delivered / (end.xactCommit - start.xactCommit);
        }
        if (profileDir) {
          await mkdir(profileDir, { recursive: true });
          await writeFile(path.join(profileDir, 'deliveries'), `${warmupOk + figures.ok}\n`);
        }
        roundResults.push({ ...figures, costs });
        const sampler = figures.sampler
          ? `; memory sampler ${figures.sampler.samples} samples, ${figures.sampler.cpuMs.toFixed(1)} ms CPU each`
          : '';
        console.log(
          `  round ${round + 1}, ${target}: done${sampler}${writer ? `; ${(figures.ok / writer.batches).toFixed(1)} deliveries a group commit, ${formatWriterStats(writer)}` : ''}`,
        );
      } finally {
        await cleanup();
      }
    }
  }

  // Per target, the median over the rounds; ratios are taken within a round, then their median.
  const roundRatios = (target: Target, to: Target): (number | undefined)[] =>
    results.map((round) => {
      const a = round.find((f) => f.target === target);
      const b = round.find((f) => f.target === to);
      return a && b ? (a.rps / b.rps) * 100 : undefined;
    });
  const ratio = (target: Target, to: Target): string => {
    const r = medianOf(roundRatios(target, to));
    return r === undefined ? 'n/a' : `${r.toFixed(1)}%`;
  };
  const fixed = (x: number | undefined, digits: number) => (x === undefined ? 'n/a' : x.toFixed(digits));
  const summary = targets.map((target) => {
    const runs = results.map((round) => round.find((f) => f.target === target)!);
    return {
      target,
      rps: median(runs.map((r) => r.rps)),
      p50: median(runs.map((r) => r.p50)),
      p99: median(runs.map((r) => r.p99)),
      ok: median(runs.map((r) => r.ok)),
      non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
      errors: runs.reduce((n, r) => n + r.errors, 0),
      peakRssMb: medianOf(runs.map((r) => r.peakRssMb)),
      postgresRssMb: medianOf(runs.map((r) => r.postgres?.rssMb)),
      postgresPssMb: medianOf(runs.map((r) => r.postgres?.pssMb)),
      totalMb: medianOf(runs.map((r) => r.totalMb)),
      nodeMs: medianOf(runs.map((r) => r.costs?.nodeMs)),
      postgresMs: medianOf(runs.map((r) => r.costs?.postgresMs)),
      postgresAllMs: medianOf(runs.map((r) => r.costs?.postgresAllMs)),
      rows: medianOf(runs.map((r) => r.costs?.rows)),
      walBytes: medianOf(runs.map((r) => r.costs?.walBytes)),
      perCommit: medianOf(runs.map((r) => r.costs?.perCommit)),
    };
  });

  console.log(
    `\n${rounds > 1 ? `medians of ${rounds} rounds` : 'one round'}; "bare" persists nothing, "durable" is the minimal durable reference route`,
  );
  console.log(
    'target     req/s     p50 ms  p99 ms  / bare  / durable  2xx       non-2xx  errors  peak RSS MB  PostgreSQL peak RSS/PSS MB  hookline+PG peak MB',
  );
  for (const r of summary) {
    const pgMem =
      r.postgresRssMb !== undefined && r.postgresPssMb !== undefined
        ? `${r.postgresRssMb.toFixed(0)} / ${r.postgresPssMb.toFixed(0)}`
        : 'n/a';
    console.log(
      `${r.target.padEnd(10)} ${r.rps.toFixed(0).padStart(8)}  ${String(r.p50).padStart(6)}  ${String(r.p99).padStart(6)}  ${ratio(r.target, 'bare').padStart(6)}  ${ratio(r.target, 'durable').padStart(8)}  ${r.ok.toFixed(0).padStart(8)}  ${String(r.non2xx).padStart(7)}  ${String(r.errors).padStart(6)}  ${r.peakRssMb === undefined ? 'n/a' : r.peakRssMb.toFixed(0).padStart(11)}  ${pgMem.padStart(26)}  ${r.totalMb === undefined ? 'n/a' : r.totalMb.toFixed(0).padStart(19)}`,
    );
  }
  if (targets.includes('embedded') && targets.includes('postgres')) {
    // Each round's ratio too: how far they scatter says how much the median can be trusted.
    const each = roundRatios('embedded', 'postgres').map((r) =>
      r === undefined ? 'n/a' : `${r.toFixed(1)}%`,
    );
    console.log(
      `\nembedded / server mode, same run: ${ratio('embedded', 'postgres')} of the rate${rounds > 1 ? ` (median; rounds: ${each.join(', ')})` : ''}`,
    );
  }
  console.log(
    '\nper delivery  CPU ms node  CPU ms PostgreSQL  (all its processes)  rows inserted  WAL bytes  deliveries per commit',
  );
  for (const r of summary) {
    console.log(
      `${r.target.padEnd(12)}  ${fixed(r.nodeMs, 3).padStart(11)}  ${fixed(r.postgresMs, 3).padStart(17)}  ${(r.postgresAllMs === undefined ? '' : fixed(r.postgresAllMs, 3)).padStart(19)}  ${fixed(r.rows, 2).padStart(13)}  ${fixed(r.walBytes, 0).padStart(9)}  ${fixed(r.perCommit, 1).padStart(21)}`,
    );
  }
  console.log(
    'CPU: /proc/<pid>/stat of the server process and of the backends on its database (embedded: also every process of its PostgreSQL), from after the warm-up until inserts stop; rows and commits: pg_stat_database of its database, WAL: pg_current_wal_lsn() (cluster-wide: on the shared server other databases count too), over warm-up and run (embedded: until the inserts stop, its server stops with hookline)',
  );
  console.log(`\nload average at end: ${load()}`);
  console.log(
    'targets: postgres >= 60% of durable (and >= 50% of bare) with p99 < 25 ms; embedded >= 90% of server mode; embedded peak: hookline < 250 MB, hookline + its PostgreSQL < 400 MB',
  );
  console.log(
    'PostgreSQL RSS counts shared buffers once per process that touched them; PSS divides shared pages among their sharers (what the processes really hold); hookline+PG = hookline RSS + PostgreSQL PSS, sampled together (every --memory-every ms, on a worker thread)',
  );
}

await main();
