/**
 * The SSE half of `bench/screens.ts`: N clients on GET /events while the server records
 * deliveries at a fixed rate; latency from each delivery's received_at to its arrival at each
 * client, and a check that every client got every delivery exactly once.
 */
import http from 'node:http';
import { formatMemory, type Memory, retentionOff, startServer, withDatabase } from './screens-server.ts';

/** Latencies in a 0.1 ms histogram up to 60 s: millions of samples in fixed memory. */
class Histogram {
  readonly buckets = new Uint32Array(600_001);
  count = 0;
  max = 0;
  add(ms: number) {
    const v = Math.max(0, ms);
    this.buckets[Math.min(600_000, Math.round(v * 10))]!++;
    this.count++;
    if (v > this.max) this.max = v;
  }
  percentile(p: number): number {
    const target = Math.ceil(this.count * p);
    let seen = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      seen += this.buckets[i]!;
      if (seen >= target) return i / 10;
    }
    return this.max;
  }
}

interface SseClient {
  received: number;
  duplicates: number;
  lastId: number;
  ready: boolean;
  destroy(): void;
}

const agent = new http.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
const MARK = '"received_at":"';
const ID_MARK = '"id":';
const receivedAtById = new Map<number, number>();

/** A minimal SSE reader: counts `event-received` frames and measures each one's latency. */
function sseClient(url: string, histogram: Histogram): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const client: SseClient = {
      received: 0,
      duplicates: 0,
      lastId: 0,
      ready: false,
      destroy: () => req.destroy(),
    };
    let buffer = '';
    const req = http.get(`${url}/events`, { agent }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const now = Date.now();
        buffer += chunk;
        const end = buffer.lastIndexOf('\n\n');
        if (end < 0) return;
        const complete = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (!client.ready && complete.includes('event: ready')) {
          client.ready = true;
          resolve(client);
        }
        let at = complete.indexOf('event: event-received');
        while (at >= 0) {
          const idAt = complete.indexOf(ID_MARK, at) + ID_MARK.length;
          const id = Number(complete.slice(idAt, complete.indexOf(',', idAt)));
          if (id <= client.lastId) client.duplicates++;
          else client.lastId = id;
          // Every client gets the same deliveries: read each one's received_at once.
          let receivedAt = receivedAtById.get(id);
          if (receivedAt === undefined) {
            const t = complete.indexOf(MARK, at) + MARK.length;
            receivedAt = Date.parse(complete.slice(t, t + 24));
            receivedAtById.set(id, receivedAt);
          }
          histogram.add(now - receivedAt);
          client.received++;
          at = complete.indexOf('event: event-received', idAt);
        }
      });
    });
    req.on('error', (err) => {
      if (!client.ready) reject(err);
    });
  });
}

export async function sseBench(clients: number, rate: number, seconds: number): Promise<void> {
  await withDatabase(async (databaseUrl) => {
    const server = await startServer(databaseUrl);
    try {
      await retentionOff(server.url);
      const histogram = new Histogram();
      const connected: SseClient[] = [];
      for (let i = 0; i < clients; i += 50) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(50, clients - i) }, () => sseClient(server.url, histogram)),
        );
        connected.push(...batch);
      }
      console.log(`sse: ${connected.length} clients connected; recording ${rate}/s for ${seconds} s`);
      const serverCpu0 = await server.request<NodeJS.CpuUsage>({ cmd: 'cpu' }, 'cpu');
      const ownCpu0 = process.cpuUsage();
      const wall0 = performance.now();
      const injected = await server.request<{
        sent: number;
        seconds: number;
        storeP50: number;
        storeP99: number;
      }>({ cmd: 'inject', rate, seconds }, 'injected');
      const deadline = Date.now() + 10_000;
      while (connected.some((c) => c.received < injected.sent) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
      const wall = (performance.now() - wall0) / 1000;
      const serverCpu1 = await server.request<NodeJS.CpuUsage>({ cmd: 'cpu' }, 'cpu');
      const serverBusy =
        (serverCpu1.user + serverCpu1.system - serverCpu0.user - serverCpu0.system) / 1e6 / wall;
      const own = process.cpuUsage(ownCpu0);
      const clientBusy = (own.user + own.system) / 1e6 / wall;
      const memory = await server.request<Memory>({ cmd: 'memory' }, 'memory');
      const complete = connected.filter((c) => c.received === injected.sent).length;
      const duplicates = connected.reduce((n, c) => n + c.duplicates, 0);
      for (const c of connected) c.destroy();
      console.log(
        [
          `sse: ${injected.sent} deliveries in ${injected.seconds.toFixed(1)} s (${Math.round(injected.sent / injected.seconds)}/s) to ${clients} clients`,
          `  latency p50 ${histogram.percentile(0.5).toFixed(1)} ms, p99 ${histogram.percentile(0.99).toFixed(1)} ms, max ${histogram.max.toFixed(0)} ms over ${histogram.count} receptions`,
          `  of which the store's live subscription (append to subscriber): p50 ${injected.storeP50} ms, p99 ${injected.storeP99} ms`,
          `  clients with every delivery: ${complete}/${clients}; duplicates: ${duplicates}`,
          `  CPU: server ${(serverBusy * 100).toFixed(0)}% of a core (${((serverBusy * wall * 1000) / injected.sent).toFixed(2)} ms a delivery, recording and projections included), clients ${(clientBusy * 100).toFixed(0)}%; ${formatMemory(memory)}`,
        ].join('\n'),
      );
    } finally {
      server.child.send({ cmd: 'stop' });
      await new Promise((r) => server.child.once('exit', r));
    }
  });
}
