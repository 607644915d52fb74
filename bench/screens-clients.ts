/**
 * SSE clients for `bench/screens-sse.ts`, run in a worker thread: each group of clients has an event
 * loop of its own, so a crowded group's own delay (measured here with monitorEventLoopDelay) can be
 * told from the server's. Run by the benchmark, not by hand.
 */
import net from 'node:net';
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
  /** Socket reads during the run, all clients together: the server's bursts as the clients saw them. */
  readonly reads: number;
  /** received_at to arrival. */
  readonly endToEnd: Histogram;
  /** The server's plain $all subscriber to arrival: the SSE path alone. */
  readonly fromSubscriber: Histogram;
  /** This group's event-loop delay during the run, ms. */
  readonly loopDelay: { readonly p50: number; readonly p99: number; readonly max: number };
}

const RECEIVED_AT = '"received_at":"';
/** An `event-received` frame's event line and the start of its data: the summary's id comes first. */
const DELIVERY = 'event: event-received\ndata: {"id":';

interface SseClient {
  received: number;
  duplicates: number;
  lastId: number;
  destroy(): void;
}

function runGroup(init: GroupInit): void {
  const port = parentPort!;
  const target = new URL(init.url);
  // Arrival times, one row per client, one column per delivery (ms since `origin`): both
  // latencies are computed from them at the end, off the clients' event loop.
  const arrivals = new Float32Array(init.clients * init.total).fill(Number.NaN);
  /** Each delivery's received_at (epoch ms), read from the first frame of it any client got. */
  const receivedAt = new Float64Array(init.total + 1).fill(Number.NaN);
  const origin = wallMs();
  const loop = monitorEventLoopDelay({ resolution: 5 });
  let counting = false;
  let reads = 0;

  /**
   * A minimal SSE client on a plain socket: one request, the response head checked once, then the
   * body read as latin1 text (ASCII here) and only each `event-received` frame's id read from it,
   * which proves every delivery arrived once and in order. The server ends the stream by closing
   * the connection (no chunked framing), so the body needs no decoding. The latencies come from
   * the arrival times at the end.
   */
  const connect = (index: number): Promise<SseClient> =>
    new Promise((resolve, reject) => {
      let ready = false;
      let head = true;
      let rest = '';
      const row = index * init.total - 1;
      const socket = net.connect({ host: target.hostname, port: Number(target.port) });
      const client: SseClient = { received: 0, duplicates: 0, lastId: 0, destroy: () => socket.destroy() };
      socket.setNoDelay(true);
      socket.write(`GET /events HTTP/1.1\r\nHost: ${target.host}\r\nAccept: text/event-stream\r\n\r\n`);
      socket.on('data', (chunk: Buffer) => {
        const now = wallMs() - origin;
        if (counting) reads++;
        let text = rest === '' ? chunk.toString('latin1') : rest + chunk.toString('latin1');
        if (head) {
          const body = text.indexOf('\r\n\r\n');
          if (body < 0) {
            rest = text;
            return;
          }
          const fields = text.slice(0, body).toLowerCase();
          if (!fields.startsWith('http/1.1 200') || fields.includes('transfer-encoding:')) {
            socket.destroy();
            reject(new Error(`GET /events: expected a 200 with a close-delimited body, got ${fields}`));
            return;
          }
          head = false;
          text = text.slice(body + 4);
        }
        const end = text.lastIndexOf('\n\n');
        if (end < 0) {
          rest = text;
          return;
        }
        rest = end + 2 < text.length ? text.slice(end + 2) : '';
        if (!ready && text.lastIndexOf('event: ready', end) >= 0) {
          ready = true;
          resolve(client);
        }
        let at = text.indexOf(DELIVERY);
        while (at >= 0 && at < end) {
          let i = at + DELIVERY.length;
          let id = 0;
          for (let c = text.charCodeAt(i); c >= 48 && c <= 57; c = text.charCodeAt(++i))
            id = id * 10 + c - 48;
          if (id <= client.lastId) client.duplicates++;
          else client.lastId = id;
          if (id >= 1 && id <= init.total) {
            arrivals[row + id] = now;
            // Every client gets the same deliveries: read each one's received_at once.
            if (Number.isNaN(receivedAt[id]!)) {
              const t = text.indexOf(RECEIVED_AT, i) + RECEIVED_AT.length;
              receivedAt[id] = Date.parse(text.slice(t, t + 24));
            }
          }
          client.received++;
          at = text.indexOf(DELIVERY, i);
        }
      });
      socket.on('error', (err) => {
        if (!ready) reject(err);
      });
      socket.on('close', () => {
        if (!ready) reject(new Error('GET /events: the connection closed before `ready`'));
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
      counting = true;
      return;
    }
    while (connected.some((c) => c.received < m.sent) && Date.now() < m.deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    loop.disable();
    counting = false;
    const endToEnd = new Histogram();
    const fromSubscriber = new Histogram();
    for (let c = 0; c < init.clients; c++) {
      for (let d = 0; d < init.total; d++) {
        const arrived = arrivals[c * init.total + d]! + origin;
        if (Number.isNaN(arrived)) continue;
        endToEnd.add(arrived - receivedAt[d + 1]!);
        const handed = m.subscriberAt[d]!;
        if (!Number.isNaN(handed)) fromSubscriber.add(arrived - handed);
      }
    }
    const result: GroupResult = {
      clients: connected.length,
      complete: connected.filter((c) => c.received === m.sent).length,
      duplicates: connected.reduce((n, c) => n + c.duplicates, 0),
      reads,
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
