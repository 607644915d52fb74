/**
 * Start-up benchmark (design.md, "Targets"; issue 17): the real `hookline serve` in a subprocess,
 * from spawn to the first `/healthz` 200. Embedded mode: the first start on an empty data
 * directory (initdb, start, migrations) and a later start on the same directory (the server was
 * stopped with hookline); server mode beside it in the same run (first start migrates an empty
 * database). After each start, idle memory: hookline's RSS and its PostgreSQL's (RSS and PSS of
 * the postmaster and its children). Prints medians over the rounds.
 * `npm run bench:boot` (`-- --help` for the options).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../src/cli/node-flags.ts';
import { benchArgs, PG_URL_HELP } from './args.ts';
import { memoryOf, postmasterOf, processTree } from './memory.ts';
import { scratchDataDir } from './scratch-data-dir.ts';
import { createScratchDatabase } from './scratch-database.ts';

const BIN = fileURLToPath(new URL('../bin/hookline.mjs', import.meta.url));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

interface Started {
  readonly child: ChildProcess;
  readonly ms: number;
}

/** Spawns `hookline serve` and resolves when /healthz answers 200, with the time it took. */
async function start(env: Record<string, string>): Promise<Started> {
  const port = await freePort();
  const began = performance.now();
  const child = spawn(process.execPath, [...NODE_FLAGS, BIN, 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HOOKLINE_LOG_LEVEL: 'warn',
      HOOKLINE_PORT: String(port),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  for (;;) {
    if (child.exitCode !== null) throw new Error(`hookline exited before it was healthy: ${stderr}`);
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return { child, ms: performance.now() - began };
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

interface Round {
  firstMs: number;
  laterMs: number;
  hooklineMb: number;
  pgRssMb: number;
  pgPssMb: number;
}

/** Idle memory a second after a start: hookline's RSS, and its PostgreSQL's when it runs one. */
async function idleMemory(child: ChildProcess, dataDir: string | undefined) {
  await new Promise((r) => setTimeout(r, 1000));
  const hooklineMb = memoryOf([child.pid!]).rssMb;
  const pm = dataDir ? postmasterOf(dataDir) : undefined;
  const pg = pm ? memoryOf(processTree(pm)) : { rssMb: 0, pssMb: 0 };
  return { hooklineMb, pgRssMb: pg.rssMb, pgPssMb: pg.pssMb };
}

async function embeddedRound(): Promise<Round> {
  const dataDir = await scratchDataDir('boot');
  try {
    const first = await start({ HOOKLINE_DATA_DIR: dataDir.dir });
    await stop(first.child);
    const later = await start({ HOOKLINE_DATA_DIR: dataDir.dir });
    const memory = await idleMemory(later.child, dataDir.dir);
    await stop(later.child);
    return { firstMs: first.ms, laterMs: later.ms, ...memory };
  } finally {
    await dataDir.remove();
  }
}

async function serverRound(): Promise<Round> {
  const database = await createScratchDatabase('boot');
  try {
    const first = await start({ DATABASE_URL: database.url });
    await stop(first.child);
    const later = await start({ DATABASE_URL: database.url });
    const memory = await idleMemory(later.child, undefined);
    await stop(later.child);
    return { firstMs: first.ms, laterMs: later.ms, ...memory };
  } finally {
    await database.drop();
  }
}

const values = benchArgs(
  {
    script: 'bench:boot',
    summary:
      "hookline serve from spawn to the first /healthz 200: embedded mode's first start on an empty data directory and a later one, server mode beside them; idle memory of hookline and its PostgreSQL after each. Medians.",
    environment: { HOOKLINE_BENCH_PG_URL: PG_URL_HELP },
  },
  { rounds: { type: 'string', default: '3', value: 'N', describe: 'rounds, the modes alternating' } },
);
const rounds = Number(values.rounds);
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
console.log(
  `hookline serve to /healthz 200, ${rounds} rounds each, medians; load average at start: ${load()} (${os.cpus().length} CPUs)`,
);

const results: Record<string, Round[]> = { embedded: [], server: [] };
for (let i = 0; i < rounds; i++) {
  // Alternated, so that the machine's load of the moment falls on both modes alike.
  results.embedded!.push(await embeddedRound());
  results.server!.push(await serverRound());
}

console.log('\nmode      first start ms  later start ms  idle hookline RSS MB  idle PostgreSQL RSS / PSS MB');
for (const [mode, rs] of Object.entries(results)) {
  const pg =
    mode === 'embedded'
      ? `${median(rs.map((r) => r.pgRssMb)).toFixed(0)} / ${median(rs.map((r) => r.pgPssMb)).toFixed(0)}`
      : '(its own server)';
  console.log(
    `${mode.padEnd(9)} ${median(rs.map((r) => r.firstMs))
      .toFixed(0)
      .padStart(14)}  ${median(rs.map((r) => r.laterMs))
      .toFixed(0)
      .padStart(14)}  ${median(rs.map((r) => r.hooklineMb))
      .toFixed(0)
      .padStart(20)}  ${pg.padStart(28)}`,
  );
}
console.log(`\nload average at end: ${load()}`);
console.log('targets (embedded): first start under 3 s, later starts under 1.5 s');
