/**
 * The SSE half of `bench/screens.ts`: N clients on GET /events while the server records
 * deliveries at a fixed rate; latency from each delivery's received_at to its arrival at each
 * client, and a check that every client got every delivery exactly once.
 *
 * The clients run in worker threads (bench/screens-clients.ts), in two groups with an event loop
 * each: the load (all clients but the probes) and a few probe clients whose loop has little to do.
 * Where the load's latency exceeds the probes', the difference is the load generator's own delay,
 * not the server's. Each group reports its event-loop delay beside its latencies.
 */

import { Worker } from 'node:worker_threads';
import { type GroupInit, type GroupResult, Histogram, type ToGroup } from './screens-clients.ts';
import {
  formatMemory,
  type Memory,
  retentionOff,
  type SseInjection,
  startServer,
  withDatabase,
} from './screens-server.ts';
import { formatWriterStats } from './writer-stats.ts';

const CLIENTS_SCRIPT = new URL('./screens-clients.ts', import.meta.url);

interface Group {
  readonly name: string;
  readonly worker: Worker;
  readonly ready: Promise<number>;
  result(): Promise<GroupResult>;
}

function startGroup(name: string, init: GroupInit): Group {
  const worker = new Worker(CLIENTS_SCRIPT, { workerData: { screensClients: init } });
  const message = <T>(key: string) =>
    new Promise<T>((resolve, reject) => {
      const onMessage = (m: Record<string, unknown>) => {
        if (!(key in m)) return;
        worker.off('message', onMessage);
        worker.off('error', reject);
        resolve(m[key] as T);
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
    });
  const ready = message<number>('ready');
  return {
    name,
    worker,
    ready,
    async result() {
      const r = await message<GroupResult>('result');
      // Structured clone keeps the fields, not the class.
      const revive = (h: Histogram) => new Histogram(h.buckets, h.count, h.max);
      return { ...r, endToEnd: revive(r.endToEnd), fromSubscriber: revive(r.fromSubscriber) };
    },
  };
}

const ms = (n: number) => n.toFixed(1);

function describe(name: string, r: GroupResult): string {
  const e = r.endToEnd;
  const s = r.fromSubscriber;
  return [
    `  ${name} (${r.clients} clients, own event loop): received_at to client p50 ${ms(e.percentile(0.5))} ms, p99 ${ms(e.percentile(0.99))} ms, max ${e.max.toFixed(0)} ms`,
    `    subscriber to client p50 ${ms(s.percentile(0.5))} ms, p99 ${ms(s.percentile(0.99))} ms; event-loop delay p50 ${ms(r.loopDelay.p50)} ms, p99 ${ms(r.loopDelay.p99)} ms, max ${ms(r.loopDelay.max)} ms`,
    `    socket reads ${(r.reads / Math.max(1, r.clients)).toFixed(0)} a client (the server's bursts as each client saw them)`,
  ].join('\n');
}

/** One run's headline figures, for the summary of several runs. */
export interface SseRun {
  readonly p99: number;
  readonly storeP99: number;
  readonly fromSubscriberP99: number;
  /** The probes' subscriber-to-client p99 (NaN without probes). */
  readonly probeFromSubscriberP99: number;
  readonly everyDeliveryOnce: boolean;
}

export async function sseBench(
  clients: number,
  rate: number,
  seconds: number,
  probes: number,
  profileDir?: string,
): Promise<SseRun> {
  const probeCount = Math.min(probes, Math.max(0, clients - 1));
  return withDatabase(async (databaseUrl): Promise<SseRun> => {
    const server = await startServer(databaseUrl, profileDir);
    const total = rate * seconds;
    const groups: Group[] = [];
    try {
      await retentionOff(server.url);
      groups.push(startGroup('load', { url: server.url, clients: clients - probeCount, total }));
      if (probeCount > 0) groups.push(startGroup('probe', { url: server.url, clients: probeCount, total }));
      const connected = (await Promise.all(groups.map((g) => g.ready))).reduce((a, b) => a + b, 0);
      console.log(
        `sse: ${connected} clients connected (${clients - probeCount} load, ${probeCount} probe); recording ${rate}/s for ${seconds} s`,
      );
      const serverCpu0 = await server.request<NodeJS.CpuUsage>({ cmd: 'cpu' }, 'cpu');
      const ownCpu0 = process.cpuUsage();
      const wall0 = performance.now();
      for (const g of groups) g.worker.postMessage({ cmd: 'start' } satisfies ToGroup);
      const injected = await server.request<SseInjection>({ cmd: 'inject', rate, seconds }, 'injected');
      // JSON over IPC turns NaN into null.
      const subscriberAt = Float64Array.from(injected.subscriberAt, (t) => (t === null ? Number.NaN : t));
      const finish: ToGroup = {
        cmd: 'finish',
        sent: injected.sent,
        subscriberAt,
        deadline: Date.now() + 10_000,
      };
      const results = await Promise.all(
        groups.map((g) => {
          const r = g.result();
          g.worker.postMessage(finish);
          return r;
        }),
      );
      const wall = (performance.now() - wall0) / 1000;
      const serverCpu1 = await server.request<NodeJS.CpuUsage>({ cmd: 'cpu' }, 'cpu');
      const serverUser = (serverCpu1.user - serverCpu0.user) / 1e3;
      const serverSystem = (serverCpu1.system - serverCpu0.system) / 1e3;
      const serverBusy = (serverUser + serverSystem) / 1e3 / wall;
      const own = process.cpuUsage(ownCpu0);
      const clientBusy = (own.user + own.system) / 1e6 / wall;
      const memory = await server.request<Memory>({ cmd: 'memory' }, 'memory');

      const all = new Histogram();
      const allFromSubscriber = new Histogram();
      for (const r of results) {
        all.merge(r.endToEnd);
        allFromSubscriber.merge(r.fromSubscriber);
      }
      const complete = results.reduce((n, r) => n + r.complete, 0);
      const duplicates = results.reduce((n, r) => n + r.duplicates, 0);
      const l = injected.loopDelay;
      console.log(
        [
          `sse: ${injected.sent} deliveries in ${injected.seconds.toFixed(1)} s (${Math.round(injected.sent / injected.seconds)}/s) to ${clients} clients`,
          `  latency p50 ${ms(all.percentile(0.5))} ms, p99 ${ms(all.percentile(0.99))} ms, max ${all.max.toFixed(0)} ms over ${all.count} receptions`,
          `  append to durable (group commit): p50 ${injected.commitP50} ms, p99 ${injected.commitP99} ms`,
          `    ${formatWriterStats(injected.writer)}`,
          `  append to subscriber (the store's live subscription): p50 ${injected.storeP50} ms, p99 ${injected.storeP99} ms`,
          `    of which acknowledged to subscriber (wake-up and live read): p50 ${injected.wakeP50} ms, p99 ${injected.wakeP99} ms`,
          `  subscriber to client (hub, SSE writes, client): p50 ${ms(allFromSubscriber.percentile(0.5))} ms, p99 ${ms(allFromSubscriber.percentile(0.99))} ms`,
          `  server event-loop delay p50 ${ms(l.p50)} ms, p99 ${ms(l.p99)} ms, max ${ms(l.max)} ms`,
          ...results.map((r, i) => describe(groups[i]!.name, r)),
          `  clients with every delivery: ${complete}/${clients}; duplicates: ${duplicates}`,
          `  CPU: server ${(serverBusy * 100).toFixed(0)}% of a core (${((serverBusy * wall * 1000) / injected.sent).toFixed(2)} ms a delivery, user ${(serverUser / injected.sent).toFixed(2)} + system ${(serverSystem / injected.sent).toFixed(2)}, recording and projections included), clients ${(clientBusy * 100).toFixed(0)}%; ${formatMemory(memory)}`,
        ].join('\n'),
      );
      const probe = results[groups.findIndex((g) => g.name === 'probe')];
      return {
        p99: all.percentile(0.99),
        storeP99: injected.storeP99,
        fromSubscriberP99: allFromSubscriber.percentile(0.99),
        probeFromSubscriberP99: probe ? probe.fromSubscriber.percentile(0.99) : Number.NaN,
        everyDeliveryOnce: complete === clients && duplicates === 0,
      };
    } finally {
      await Promise.all(groups.map((g) => g.worker.terminate()));
      server.child.send({ cmd: 'stop' });
      await new Promise((r) => server.child.once('exit', r));
    }
  });
}
