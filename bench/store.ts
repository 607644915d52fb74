/**
 * Event store benchmark (issue 2, point 12): append throughput with 32 concurrent writers of 1 KB
 * events (group commit), and catch-up read rate, in embedded mode (hookline's own PostgreSQL) and on PostgreSQL. Prints a table of
 * medians over a few rounds. Run: `npm run bench:store` (Node 24; `-- --help` for the options). See bench/README.md.
 */
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { migrateToLatest } from '../src/db/migrate.ts';
import { openEmbedded, openPostgres, type SqlDatabase } from '../src/db/open.ts';
import { type EventStore, type Position, START } from '../src/eventstore/port.ts';
import { createSqlEventStore } from '../src/eventstore/sql/store.ts';
import { benchArgs, PG_URL_HELP } from './args.ts';
import { backendCpu, databaseCounters } from './ingest-reference.ts';
import { formatMb, peakRssMb, resetPeakRss } from './memory.ts';
import { scratchDataDir } from './scratch-data-dir.ts';
import { BENCH_ADMIN_URL, createScratchDatabase } from './scratch-database.ts';

const args = benchArgs(
  {
    script: 'bench:store',
    summary:
      'Appends with 32 concurrent writers of 1 KB events (group commit), then reads $all back, in embedded mode and on PostgreSQL; then, on PostgreSQL, the CPU one append costs by how many are in flight; prints medians.',
    environment: { HOOKLINE_BENCH_PG_URL: PG_URL_HELP },
  },
  {
    rounds: { type: 'string', default: '3', value: 'N', describe: 'rounds per case' },
    seconds: { type: 'string', default: '3', value: 'S', describe: 'append phase per round' },
    only: { type: 'string', value: 'NAME', describe: 'one backend: embedded | postgres' },
    connections: {
      type: 'string',
      default: '2',
      value: 'N',
      describe: 'PostgreSQL: append batches in flight at once; the service runs 1',
    },
  },
);
const rounds = Number(args.rounds);
const seconds = Number(args.seconds);
const WRITERS = 32;
const payload = new Uint8Array(randomBytes(1024));

interface Round {
  appendsPerSec: number;
  p99Ms: number;
  readAllPerSec: number;
  subscribePerSec: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

/** 32 writers append one 1 KB event per call until the deadline; the store groups them into batches. */
async function appendPhase(store: EventStore, round: number, shared: boolean) {
  const latencies: number[] = [];
  let count = 0;
  let last: Position = START;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, w) => {
      const stream = shared ? `bench-${round}-deliveries` : `bench-${round}-writer-${w}`;
      while (performance.now() < deadline) {
        const t = performance.now();
        const r = await store.append(stream, [
          { type: 'DeliveryReceived', data: payload, contentType: 'application/octet-stream' },
        ]);
        if (store.comparePositions(r.position, last) > 0) last = r.position;
        latencies.push(performance.now() - t);
        count++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return { perSec: count / elapsed, p99Ms: percentile(latencies, 0.99), count, last };
}

async function readAllPhase(store: EventStore, after: Position, expected: number) {
  const started = performance.now();
  let n = 0;
  for await (const _ of store.readAll({ after })) n++;
  if (n < expected) throw new Error(`readAll saw ${n} events, expected at least ${expected}`);
  return n / ((performance.now() - started) / 1000);
}

function subscribePhase(store: EventStore, after: Position, expected: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let n = 0;
    const sub = store.subscribeAll({ after }).subscribe({
      next: () => {
        if (++n === expected) {
          sub.unsubscribe();
          resolve(n / ((performance.now() - started) / 1000));
        }
      },
      error: reject,
    });
  });
}

interface Case {
  readonly label: string;
  readonly shared: boolean;
  /** Subscriptions following $all live while the writers append (projections, the SSE feed). */
  readonly followers: number;
}

const cases: readonly Case[] = [
  { label: '32 streams', shared: false, followers: 0 },
  { label: '1 shared stream', shared: true, followers: 0 },
  { label: '32 streams, 8 live subscribers', shared: false, followers: 8 },
];

async function runCase(store: EventStore, c: Case): Promise<Round[]> {
  const results: Round[] = [];
  for (let r = 0; r < rounds; r++) {
    const before = await store.headPosition();
    const followers = Array.from({ length: c.followers }, () =>
      store.subscribeAll({ after: before }).subscribe(),
    );
    const appended = await appendPhase(store, r, c.shared);
    for (const f of followers) f.unsubscribe();
    // Any transaction open on the cluster holds the xid8 horizon back; reads are timed once it has passed.
    while (store.comparePositions(await store.headPosition(), appended.last) < 0) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const readAllPerSec = await readAllPhase(store, before, appended.count);
    const subscribePerSec = await subscribePhase(store, before, appended.count);
    results.push({ appendsPerSec: appended.perSec, p99Ms: appended.p99Ms, readAllPerSec, subscribePerSec });
  }
  return results;
}

async function withPostgres<T>(fn: (sql: SqlDatabase, database: string) => Promise<T>): Promise<T> {
  const database = await createScratchDatabase('store');
  const sql = openPostgres(database.url);
  try {
    return await fn(sql, new URL(database.url).pathname.slice(1));
  } finally {
    await sql.close();
    await database.drop();
  }
}

async function withEmbedded<T>(fn: (sql: SqlDatabase) => Promise<T>): Promise<T> {
  const dataDir = await scratchDataDir('store');
  const sql = await openEmbedded(dataDir.dir);
  try {
    return await fn(sql);
  } finally {
    await sql.close();
    await dataDir.remove();
  }
}

const rows: Array<Record<string, string>> = [];
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

for (const backend of ['embedded', 'postgres'] as const) {
  if (args.only && args.only !== backend) continue;
  const open = backend === 'embedded' ? withEmbedded : withPostgres;
  for (const c of cases) {
    resetPeakRss(); // each case's own peak (this process only: the database is a server either way)
    const results = await open(async (sql) => {
      await migrateToLatest(sql.db);
      const store = await createSqlEventStore(sql, { writers: Number(args.connections) });
      try {
        return await runCase(store, c);
      } finally {
        await store.close();
      }
    });
    rows.push({
      backend: backend === 'embedded' ? 'embedded (own PostgreSQL)' : 'PostgreSQL',
      writers: c.label,
      'appends/s': fmt(median(results.map((r) => r.appendsPerSec))),
      'append p99 ms': median(results.map((r) => r.p99Ms)).toFixed(1),
      'readAll events/s': fmt(median(results.map((r) => r.readAllPerSec))),
      'subscribe catch-up events/s': fmt(median(results.map((r) => r.subscribePerSec))),
      'peak RSS': formatMb(peakRssMb()),
    });
    console.error(`done: ${backend}, ${c.label}`);
  }
}

/**
 * What one append costs by how many are in flight at once (PostgreSQL): each writer appends one
 * small event a call to a stream of its own at its expected revision, as a claim or a completion
 * does. With one in flight every append is a transaction of its own; with more, the group commit
 * shares one among them. CPU of this process (the store's writer) and of the database's backends.
 */
async function appendCost(store: EventStore, database: string, inFlight: number, round: number) {
  const event = new Uint8Array(randomBytes(300));
  const streams = Array.from({ length: inFlight }, (_, w) => `cost-${inFlight}-${round}-${w}`);
  const next = streams.map(() => -1n);
  const deadline = performance.now() + seconds * 1000;
  const before = await databaseCounters(BENCH_ADMIN_URL, database);
  const cpu = process.cpuUsage();
  const started = performance.now();
  let count = 0;
  await Promise.all(
    streams.map(async (stream, w) => {
      while (performance.now() < deadline) {
        const expectedRevision = next[w]! < 0n ? ('no_stream' as const) : next[w]!;
        const r = await store.append(
          stream,
          [{ type: 'TodoClaimed', data: event, contentType: 'application/octet-stream' }],
          { expectedRevision },
        );
        next[w] = r.nextExpectedRevision;
        count++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  const after = await databaseCounters(BENCH_ADMIN_URL, database);
  const pgSeconds = backendCpu(before.backends, after.backends);
  return {
    perSec: count / elapsed,
    nodeUs: (used.user + used.system) / count,
    pgUs: pgSeconds === undefined ? Number.NaN : (pgSeconds * 1e6) / count,
  };
}

const costRows: Array<Record<string, string>> = [];
if (!args.only || args.only === 'postgres') {
  await withPostgres(async (sql, database) => {
    await migrateToLatest(sql.db);
    const store = await createSqlEventStore(sql, { writers: 1 });
    try {
      for (const inFlight of [1, 4, 16]) {
        const results = [];
        for (let r = 0; r < rounds; r++) results.push(await appendCost(store, database, inFlight, r));
        costRows.push({
          'appends in flight': String(inFlight),
          'appends/s': fmt(median(results.map((x) => x.perSec))),
          'CPU µs an append, this process': median(results.map((x) => x.nodeUs)).toFixed(0),
          'CPU µs an append, PostgreSQL': median(results.map((x) => x.pgUs)).toFixed(0),
        });
        console.error(`done: PostgreSQL, ${inFlight} appends in flight`);
      }
    } finally {
      await store.close();
    }
  });
}

console.log(
  `\nEvent store: ${WRITERS} concurrent writers, 1 KB events, one event per append; medians of ${rounds} rounds of ${seconds} s\n`,
);
console.table(rows);
if (costRows.length > 0) {
  console.log(
    `\nOne append's cost (PostgreSQL): one 300-byte event to a stream of each writer's own at its expected revision (a claim, a completion); medians of ${rounds} rounds of ${seconds} s\n`,
  );
  console.table(costRows);
}
console.log(
  `${cpus().length} CPUs; load average at the end ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} (other work on the machine lowers every figure)`,
);
