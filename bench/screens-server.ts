/**
 * The server side of `bench/screens.ts`: hookline on PostgreSQL in a child process (its own event
 * loop), with a delivery injector driven over IPC. Run by the benchmark, not by hand.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../src/cli/node-flags.ts';
import { formatMb, peakRssMb } from './memory.ts';
import { prose } from './payload.ts';
import { createScratchDatabase } from './scratch-database.ts';
import { wallMs } from './screens-clients.ts';
import { type WriterStats, writerStats } from './writer-stats.ts';

const SELF = fileURLToPath(import.meta.url);

export interface SseInjection {
  readonly sent: number;
  readonly seconds: number;
  /** From received_at to a plain $all subscriber in the server: the store's share of the latency. */
  readonly storeP50: number;
  readonly storeP99: number;
  /** From received_at to the append's acknowledgement (durable): the group commit's part of it. */
  readonly commitP50: number;
  readonly commitP99: number;
  /** From the append's acknowledgement to the plain subscriber: the wake-up and the live read. */
  readonly wakeP50: number;
  readonly wakeP99: number;
  /** When the plain subscriber got delivery id i + 1 (wall-clock ms, sub-ms precision; NaN: never). */
  readonly subscriberAt: number[];
  /** The group commit during the injection (batches, their size, queue, connection and call times). */
  readonly writer: WriterStats;
  /** The server's event-loop delay during the injection, ms. */
  readonly loopDelay: { readonly p50: number; readonly p99: number; readonly max: number };
}

/** The server's resident set now and its peak (VmHWM) so far, in MB. */
export interface Memory {
  readonly rssMb: number;
  readonly peakMb: number | undefined;
}

function memory(): Memory {
  return { rssMb: process.memoryUsage().rss / 1024 / 1024, peakMb: peakRssMb() };
}

export const formatMemory = (m: Memory): string =>
  `server RSS ${m.rssMb.toFixed(0)} MB (peak ${formatMb(m.peakMb)})`;

export type Command =
  | { cmd: 'inject'; rate: number; seconds: number }
  | { cmd: 'memory' }
  | { cmd: 'cpu' }
  | { cmd: 'stop' };

async function serve(databaseUrl: string): Promise<void> {
  const { buildApp } = await import('../src/app.ts');
  const { loadConfig } = await import('../src/config.ts');
  const { createRuntime } = await import('../src/runtime.ts');
  const { createDeliveryRecorder } = await import('../src/ingest/recorder.ts');
  const { processMetrics } = await import('../src/metrics/instruments.ts');
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    HOOKLINE_HOST: '127.0.0.1',
    HOOKLINE_PORT: '0',
    HOOKLINE_LOG_LEVEL: 'warn',
    HOOKLINE_CODEHOST_SECRET: 'bench',
  });
  const runtime = await createRuntime(config);
  const app = await buildApp(runtime, { requestLogging: false });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const recorder = createDeliveryRecorder({ store: runtime.store, clock: runtime.clock });
  const payload = new TextEncoder().encode(
    JSON.stringify({ ref: 'refs/heads/main', after: randomBytes(20).toString('hex'), pad: prose(700) }),
  );

  // A second $all subscription, like the hub's: how long the store takes to hand a delivery to
  // a live subscriber, before any SSE work.
  const storeLatencies: number[] = [];
  const commitLatencies: number[] = [];
  /** By position: when the append was acknowledged, and when the plain subscriber got it (either may come first). */
  const ackedAt = new Map<string, number>();
  const handedAt = new Map<string, number>();
  let subscriberAt: number[] = [];
  const decoder = new TextDecoder();
  runtime.store
    .subscribeAll({ after: await runtime.store.headPosition(), filter: (e) => e.streamId === 'deliveries' })
    .subscribe((e) => {
      const now = wallMs();
      subscriberAt[Number(e.revision)] = now; // the delivery's id is its revision + 1
      handedAt.set(e.position, now);
      const meta = JSON.parse(decoder.decode(e.metadata ?? new Uint8Array())) as { received_at: string };
      storeLatencies.push(now - Date.parse(meta.received_at));
    });
  const loop = monitorEventLoopDelay({ resolution: 5 });

  const inject = async (rate: number, seconds: number): Promise<SseInjection> => {
    storeLatencies.length = 0;
    commitLatencies.length = 0;
    ackedAt.clear();
    handedAt.clear();
    const total = rate * seconds;
    subscriberAt = new Array<number>(total).fill(Number.NaN);
    const metricsBefore = await processMetrics.metrics();
    loop.reset();
    loop.enable();
    const started = performance.now();
    let sent = 0;
    const inflight = new Set<Promise<unknown>>();
    while (sent < total) {
      const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
      while (sent < due) {
        sent++;
        // The recorder stamps received_at itself, just before the append: this is as close.
        const asked = wallMs();
        const p = recorder
          .record({
            provider: 'codehost',
            family: 'webhook',
            trust_mode: 'signed',
            verified: true,
            verify_detail: 'sha256',
            event_type: 'push',
            external_id: null,
            content_type: 'application/json',
            source_ip: '127.0.0.1',
            headers: {},
            payload,
          })
          .then((r) => {
            const now = wallMs();
            commitLatencies.push(now - asked);
            if (r.position) ackedAt.set(r.position, now);
          })
          .finally(() => inflight.delete(p));
        inflight.add(p);
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    await Promise.all(inflight);
    const elapsed = (performance.now() - started) / 1000;
    while (storeLatencies.length < sent) await new Promise((r) => setTimeout(r, 20));
    loop.disable();
    const writer = writerStats(metricsBefore, await processMetrics.metrics());
    const wakeLatencies: number[] = [];
    for (const [position, acked] of ackedAt) {
      const handed = handedAt.get(position);
      if (handed !== undefined) wakeLatencies.push(handed - acked);
    }
    const percentile = (xs: number[], p: number) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)]! * 10) / 10;
    };
    return {
      sent,
      seconds: elapsed,
      storeP50: percentile(storeLatencies, 0.5),
      storeP99: percentile(storeLatencies, 0.99),
      commitP50: percentile(commitLatencies, 0.5),
      commitP99: percentile(commitLatencies, 0.99),
      wakeP50: percentile(wakeLatencies, 0.5),
      wakeP99: percentile(wakeLatencies, 0.99),
      subscriberAt,
      writer,
      loopDelay: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
    };
  };

  process.on('message', async (m: Command) => {
    if (m.cmd === 'inject') process.send?.({ injected: await inject(m.rate, m.seconds) });
    else if (m.cmd === 'memory') process.send?.({ memory: memory() });
    else if (m.cmd === 'cpu') process.send?.({ cpu: process.cpuUsage() });
    else if (m.cmd === 'stop') {
      await app.close();
      await runtime.close();
      process.exit(0);
    }
  });
  process.send?.({ port });
}

export interface Server {
  readonly child: ChildProcess;
  readonly url: string;
  request<T>(command: Command, key: string): Promise<T>;
}

/** `profileDir`: the server writes a V8 CPU profile of its whole life there (`--cpu-prof`). */
export async function startServer(databaseUrl: string, profileDir?: string): Promise<Server> {
  // Node runs the server as `hookline serve` runs it (src/cli/node-flags.ts).
  const child = fork(SELF, [databaseUrl], {
    execArgv: [...NODE_FLAGS, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
    child.on('message', (m: { port?: number }) => {
      if (m.port) resolve(m.port);
    });
  });
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    request: <T>(command: Command, key: string) =>
      new Promise<T>((resolve) => {
        const onMessage = (m: Record<string, unknown>) => {
          if (key in m) {
            child.off('message', onMessage);
            resolve(m[key] as T);
          }
        };
        child.on('message', onMessage);
        child.send(command);
      }),
  };
}

export async function withDatabase<T>(work: (url: string) => Promise<T>): Promise<T> {
  const database = await createScratchDatabase('screens');
  try {
    return await work(database.url);
  } finally {
    await database.drop();
  }
}

/** Retention off, as for every benchmark (design.md): the job must not prune the seeded rows. */
export async function retentionOff(url: string): Promise<void> {
  const res = await fetch(`${url}/settings`, {
    method: 'POST',
    // A header-less form post asking for HTML is refused as cross-site (README "Browser safety").
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
    body: 'retention_max_age_days=0&retention_max_rows=0',
  });
  if (res.status !== 200) throw new Error(`settings answered ${res.status}`);
}

if (process.argv[1] === SELF && process.argv[2]) await serve(process.argv[2]);
