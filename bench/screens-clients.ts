/**
 * SSE clients for `bench/screens-sse.ts`, run in a worker thread: each group of clients has an event
 * loop of its own, so a crowded group's own delay (measured here with monitorEventLoopDelay) can be
 * told from the server's. Run by the benchmark, not by hand.
 */
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';

/** Latencies in a 0.1 ms histogram up to 60 s: millions of samples in fixed memory. */
export class Histogram {
  readonly buckets: Uint32Array<ArrayBufferLike>;
  count: number;
  max: number;
  constructor(buckets: Uint32Array<ArrayBufferLike> = new Uint32Array(600_001), count = 0, max = 0) {
    this.buckets = buckets;
    this.count = count;
    this.max = max;
  }
  add(ms: number) {
    const v = Math.max(0, ms);
    this.buckets[Math.min(600_000, Math.round(v * 10))]!++;
    this.count++;
    if (v > this.max) this.max = v;
  }
  merge(other: Histogram) {
    for (let i = 0; i < this.buckets.length; i++) this.buckets[i]! += other.buckets[i]!;
    this.count += other.count;
    this.max = Math.max(this.max, other.max);
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

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes. */
export const wallMs = (): number => performance.timeOrigin + performance.now();

export interface GroupInit {
  readonly url: string;
  readonly clients: number;
  /** Deliveries the run will record: their ids are 1..total (a fresh database). */
  readonly total: number;
}

export type ToGroup =
  | { readonly cmd: 'start' }
  /** Wait until every client has `sent` deliveries (or the deadline), then measure. */
  | {
      readonly cmd: 'finish';
      readonly sent: number;
      readonly subscriberAt: Float64Array;
      readonly deadline: number;
    };

export interface GroupResult {
  readonly clients: number;
  readonly complete: number;
  readonly duplicates: number;
  /** received_at to arrival. */
  readonly endToEnd: Histogram;
  /** The server's plain $all subscriber to arrival: the SSE path alone. */
  readonly fromSubscriber: Histogram;
  /** This group's event-loop delay during the run, ms. */
  readonly loopDelay: { readonly p50: number; readonly p99: number; readonly max: number };
}

const MARK = '"received_at":"';
const ID_MARK = '"id":';

interface SseClient {
  received: number;
  duplicates: number;
  lastId: number;
  destroy(): void;
}

function runGroup(init: GroupInit): void {
  const port = parentPort!;
  const agent = new http.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const endToEnd = new Histogram();
  const receivedAtById = new Map<number, number>();
  // Arrival times, one row per client, one column per delivery (ms since `origin`): the
  // subscriber-to-client latencies are computed at the end, once the server sent its times.
  const arrivals = new Float32Array(init.clients * init.total).fill(Number.NaN);
  const origin = wallMs();
  const loop = monitorEventLoopDelay({ resolution: 5 });

  /**
   * A minimal SSE reader: counts `event-received` frames and times each one. (Searching the bytes
   * instead of decoded strings was measured slower: 4.4 against 3.3 µs a burst of ten frames.)
   */
  const connect = (index: number): Promise<SseClient> =>
    new Promise((resolve, reject) => {
      let ready = false;
      const client: SseClient = { received: 0, duplicates: 0, lastId: 0, destroy: () => req.destroy() };
      let buffer = '';
      const req = http.get(`${init.url}/events`, { agent }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const now = wallMs();
          buffer += chunk;
          const end = buffer.lastIndexOf('\n\n');
          if (end < 0) return;
          const complete = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!ready && complete.includes('event: ready')) {
            ready = true;
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
            endToEnd.add(now - receivedAt);
            if (id >= 1 && id <= init.total) arrivals[index * init.total + id - 1] = now - origin;
            client.received++;
            at = complete.indexOf('event: event-received', idAt);
          }
        });
      });
      req.on('error', (err) => {
        if (!ready) reject(err);
      });
    });

  const connected: SseClient[] = [];
  void (async () => {
    for (let i = 0; i < init.clients; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, init.clients - i) }, (_, k) => connect(i + k)),
      );
      connected.push(...batch);
    }
    port.postMessage({ ready: connected.length });
  })();

  port.on('message', async (m: ToGroup) => {
    if (m.cmd === 'start') {
      loop.reset();
      loop.enable();
      return;
    }
    while (connected.some((c) => c.received < m.sent) && Date.now() < m.deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    loop.disable();
    const fromSubscriber = new Histogram();
    for (let c = 0; c < init.clients; c++) {
      for (let d = 0; d < init.total; d++) {
        const arrived = arrivals[c * init.total + d]!;
        const handed = m.subscriberAt[d]!;
        if (!Number.isNaN(arrived) && !Number.isNaN(handed)) fromSubscriber.add(arrived + origin - handed);
      }
    }
    const result: GroupResult = {
      clients: connected.length,
      complete: connected.filter((c) => c.received === m.sent).length,
      duplicates: connected.reduce((n, c) => n + c.duplicates, 0),
      endToEnd,
      fromSubscriber,
      loopDelay: {
        p50: loop.percentile(50) / 1e6,
        p99: loop.percentile(99) / 1e6,
        max: loop.max / 1e6,
      },
    };
    for (const c of connected) c.destroy();
    port.postMessage({ result });
  });
}

if (!isMainThread && workerData?.screensClients) runGroup(workerData.screensClients as GroupInit);
