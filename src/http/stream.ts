import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Subscription } from 'rxjs';
import type { Position } from '../eventstore/port.ts';
import type { LiveHub } from '../live/hub.ts';
import {
  createSseWriter,
  type SerializedBatch,
  type SseSink,
  type SseWriter,
  serializeBatch,
  sseFrame,
} from '../live/sse.ts';
import type { LiveDelivery } from '../live/summary.ts';
import type { Logger } from '../logger.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** How many clients follow GET /events now. */
    streamClients?: () => number;
  }
}

export interface StreamOptions {
  /** At most this many missed deliveries are replayed after Last-Event-ID; more is a `reset`. */
  readonly replayBound?: number;
  /** A comment line this often keeps proxies from closing an idle stream. */
  readonly keepAliveMs?: number;
  /** Unsent bytes a client may hold before it is dropped. */
  readonly maxBufferBytes?: number;
  /** Clients written in one turn of the event loop (FANOUT_SLICE). */
  readonly fanoutSlice?: number;
}

export const DEFAULT_REPLAY_BOUND = 1000;
/**
 * Clients written in one turn of the event loop. A burst to 1,000 sockets takes several ms of
 * CPU (each write is a syscall); between slices the loop serves the database's answers (the
 * group commit, the live reader) and the ingest requests that would otherwise wait behind it.
 */
export const FANOUT_SLICE = 100;
/**
 * A burst is written at most once per this many times the time its predecessor took, so writing
 * to the sockets takes at most half of the loop: with many clients (or cores busy with other
 * work) the deliveries queued meanwhile go out together, one write per client instead of several.
 * 2 rather than 4: on a quiet machine 4 held a burst of 1,000 clients up to 40 ms and the p99
 * moved from 155 to 132 ms with 2 at the same CPU (bench/README.md, issue 22). The time is the
 * writes' own, system calls included, since each is written to the socket at once.
 */
const FANOUT_PACE = 2;
/** The pause the pacing adds after a burst is bounded: latency stays in tens of ms. */
const FANOUT_MAX_PAUSE_MS = 40;
export const DEFAULT_KEEP_ALIVE_MS = 10_000;
export const DEFAULT_MAX_BUFFER_BYTES = 1024 * 1024;

export interface StreamDeps {
  readonly hub: LiveHub;
  readonly logger: Logger;
  /** The `retry:` to advertise: sse_retry_ms from the settings read model, read at each connect. */
  readonly retryMs: () => Promise<number>;
  readonly options?: StreamOptions;
}

/** Positions are short ASCII (`<txid>:<position>`, `<commit>:<prepare>`); a longer one is none of ours. */
const MAX_POSITION_LENGTH = 128;

/**
 * Where a client resumes: strictly after its `Last-Event-ID` (a reconnect), else after `?after=`
 * (a page's first connect, from the position its rows were read at: EventSource cannot send
 * Last-Event-ID on its first request). The header wins, since a reconnect repeats the URL with the
 * page's older position. Null: a fresh client, starting at the head. A repeated `after` is no
 * position (`reset`), like any string the store does not know.
 */
function resumePoint(request: FastifyRequest): string | null {
  const header = request.headers['last-event-id'];
  if (typeof header === 'string' && header.trim()) return header.trim();
  const after = (request.query as Record<string, unknown> | undefined)?.after;
  if (after === undefined) return null;
  if (typeof after !== 'string') return '';
  return after.trim() || null;
}

interface Client {
  readonly writer: SseWriter;
  /** buffering: replay in progress; filtering: skip what the replay already sent; sync: live. */
  mode: 'buffering' | 'filtering' | 'sync';
  buffer: SerializedBatch[];
  buffered: number;
  lastSent: Position;
}

/**
 * GET /events (spec 4.4 and 6). Every client hangs off the hub's one `$all` subscription: each
 * burst of deliveries is serialized once and written once per client. A client that sends
 * Last-Event-ID first subscribes (buffering live deliveries), then gets the replay from the
 * store, then the buffered deliveries newer than the last one replayed: no gap, no repeat.
 */
export function streamPlugin(deps: StreamDeps) {
  const replayBound = deps.options?.replayBound ?? DEFAULT_REPLAY_BOUND;
  const keepAliveMs = deps.options?.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  const maxBufferBytes = deps.options?.maxBufferBytes ?? DEFAULT_MAX_BUFFER_BYTES;
  const fanoutSlice = Math.max(1, deps.options?.fanoutSlice ?? FANOUT_SLICE);
  const { hub } = deps;

  return fp(
    async (app: FastifyInstance) => {
      const clients = new Set<Client>();
      // GET /metrics reads how many browsers follow the stream.
      app.decorate('streamClients', () => clients.size);
      const subscriptions: Subscription[] = [];

      const deliver = (client: Client, batch: SerializedBatch): void => {
        if (client.mode === 'sync') {
          client.writer.send(batch.joined);
          return;
        }
        if (client.mode === 'buffering') {
          client.buffer.push(batch);
          client.buffered += batch.items.length;
          // A replay that cannot keep up with the live rate is as good as a slow client.
          if (client.buffered > replayBound * 10) drop(client);
          return;
        }
        const first = batch.items.findIndex((i) => hub.comparePositions(i.position, client.lastSent) > 0);
        if (first < 0) return;
        client.mode = 'sync';
        client.writer.send(
          first === 0
            ? batch.joined
            : batch.items
                .slice(first)
                .map((i) => i.frame)
                .join(''),
        );
      };

      const drop = (client: Client): void => {
        clients.delete(client);
        client.writer.close();
      };

      /**
       * The fan-out: deliveries the hub handed over and no client has been sent yet, and the burst
       * being written. Bursts are written one after the other (each client gets them in order),
       * each over the clients connected when it started: a client that connects later reads the
       * burst's deliveries from the store (its head or its replay), as it always did.
       */
      let queued: LiveDelivery[] = [];
      let writing = false;
      let closing = false;
      let nextBurstAt = 0;
      let paceTimer: NodeJS.Timeout | undefined;

      const schedule = (): void => {
        if (writing || paceTimer || closing || queued.length === 0) return;
        const wait = nextBurstAt - performance.now();
        if (wait > 0) {
          paceTimer = setTimeout(() => {
            paceTimer = undefined;
            burst();
          }, wait);
        } else burst();
      };

      const burst = (): void => {
        const serialized = serializeBatch(queued);
        queued = [];
        const targets = [...clients];
        const started = performance.now();
        let busy = 0;
        let next = 0;
        writing = true;
        const slice = (): void => {
          const t = performance.now();
          const end = Math.min(targets.length, next + fanoutSlice);
          for (; next < end; next++) {
            const client = targets[next]!;
            if (clients.has(client)) deliver(client, serialized);
          }
          busy += performance.now() - t;
          if (next < targets.length && !closing) {
            setImmediate(slice);
            return;
          }
          writing = false;
          nextBurstAt = started + Math.min(busy * FANOUT_PACE, busy + FANOUT_MAX_PAUSE_MS);
          schedule();
        };
        slice();
      };

      /** Frames with no per-client content: encoded once, the same bytes to every socket. */
      const broadcast = (frame: string): void => {
        const bytes = Buffer.from(frame);
        for (const client of clients) client.writer.send(bytes);
      };

      subscriptions.push(
        hub.batches$.subscribe((batch) => {
          if (clients.size === 0) return;
          queued = queued.length === 0 ? [...batch] : queued.concat(batch);
          schedule();
        }),
        hub.status$.subscribe((status) => broadcast(sseFrame('status', status))),
        // A bare signal (no id, no data of anyone's): the console's todo screens fetch their rows.
        hub.todoChanges$.subscribe(() => broadcast(sseFrame('todos-changed', {}))),
      );
      const keepAlive = setInterval(() => broadcast(': keep-alive\n\n'), keepAliveMs);
      keepAlive.unref();

      app.addHook('preClose', async () => {
        closing = true;
        clearTimeout(paceTimer);
        clearInterval(keepAlive);
        for (const s of subscriptions) s.unsubscribe();
        for (const client of clients) client.writer.close();
        clients.clear();
      });

      app.get('/events', async (request: FastifyRequest, reply) => {
        const retry = await deps.retryMs().catch(() => 3000);
        reply.hijack();
        const res = reply.raw;
        // The stream ends when the connection does: no chunked framing, so each burst is one plain
        // socket write (a chunked one is four pieces, corked and flushed on the next tick).
        res.removeHeader('transfer-encoding');
        res.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache, no-store, no-transform',
          'x-accel-buffering': 'no',
          connection: 'close',
        });
        // The head goes out now, and the body is written to the socket itself: through the response,
        // each write corks the socket and leaves the system call to a tick of its own
        // (connectionCorkNT), so the burst's pacing timed less than a tenth of what it cost and every write
        // paid a cork, a tick and a buffered chunk (bench/README.md, issue 22).
        res.flushHeaders();
        const socket = await ownedSocket(res, request.raw.socket);
        if (!socket) return;
        const sink: SseSink = {
          write: (chunk) => socket.write(chunk),
          get writableLength() {
            return socket.writableLength;
          },
          destroy: () => socket.destroy(),
          // The response ends as before: the server closes the connection once what was written is sent.
          end: () => res.end(),
        };
        const client: Client = {
          writer: createSseWriter(sink, maxBufferBytes, () => {
            clients.delete(client);
            deps.logger.info('stream: slow client dropped');
          }),
          mode: 'buffering',
          buffer: [],
          buffered: 0,
          lastSent: 'start',
        };
        clients.add(client);
        // The connection's own close: a request that waited behind another response on its connection
        // may have had its 'close' already.
        socket.once('close', () => {
          clients.delete(client);
          client.writer.close();
        });
        client.writer.send(`retry: ${retry}\n\n`);

        try {
          await catchUp(client, resumePoint(request));
        } catch (err) {
          deps.logger.warn({ err }, 'stream: catch-up failed');
          drop(client);
          return;
        }
        if (client.writer.closed) return;
        const pending = client.buffer;
        client.buffer = [];
        client.buffered = 0;
        client.mode = 'filtering';
        for (const batch of pending) deliver(client, batch);
        hub.status().then(
          (s) => client.writer.send(sseFrame('status', s)),
          () => {},
        );
      });

      /** Replays what the client missed, or tells it to reload; sets where live delivery resumes. */
      async function catchUp(client: Client, lastEventId: string | null): Promise<void> {
        if (lastEventId !== null && (lastEventId === '' || lastEventId.length > MAX_POSITION_LENGTH)) {
          return reset(client, 'unknown_position');
        }
        if (lastEventId === null) {
          // A fresh client gets the head as its resume point, so a reconnect misses nothing.
          const head = await hub.headPosition();
          client.lastSent = head;
          client.writer.send(sseFrame('ready', { position: head }, head));
          return;
        }
        const result = await hub.replay(lastEventId, replayBound);
        if (result.kind === 'events' && result.events.length === 0 && !(await notAhead(lastEventId))) {
          return reset(client, 'unknown_position');
        }
        if (result.kind === 'reset') return reset(client, result.reason);
        client.lastSent = lastEventId;
        if (result.events.length > 0) {
          client.writer.sendCatchUp(serializeBatch(result.events).joined);
          client.lastSent = result.events[result.events.length - 1]!.position;
        }
      }

      /** A Last-Event-ID past the head (another database, a wiped store) would hide every live event. */
      async function notAhead(position: Position): Promise<boolean> {
        try {
          return hub.comparePositions(position, await hub.headPosition()) <= 0;
        } catch {
          return false;
        }
      }

      async function reset(client: Client, reason: string): Promise<void> {
        const head = await hub.headPosition();
        client.lastSent = head;
        client.writer.send(sseFrame('reset', { reason, replay_bound: replayBound }, head));
      }
    },
    { name: 'hookline-stream' },
  );
}

/**
 * The connection once this response owns it, or null if it closes first. A request that arrives
 * while its connection is still sending an earlier response (pipelined, or a keep-alive connection
 * reused the moment the earlier body arrived, before the server saw that response finish) is queued
 * by Node and has no socket until that one finishes: its head waits in the response meanwhile, and
 * is written when the socket is handed over, before the promise's continuation writes anything.
 */
function ownedSocket(res: ServerResponse, connection: Socket): Promise<Socket | null> {
  if (res.socket) return Promise.resolve(res.socket);
  return new Promise((resolve) => {
    const assigned = (socket: Socket) => {
      connection.off('close', gone);
      resolve(socket);
    };
    const gone = () => {
      res.off('socket', assigned);
      resolve(null);
    };
    res.once('socket', assigned);
    connection.once('close', gone);
  });
}
