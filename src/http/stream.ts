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
 * Clients written in one turn of the event loop. A round of 1,000 sockets takes several ms of
 * CPU (each write is a syscall); between slices the loop serves the database's answers (the
 * group commit, the live reader) and the ingest requests that would otherwise wait behind it.
 */
export const FANOUT_SLICE = 100;
/**
 * After a slice the fan-out pauses for (this less one) times what the slice took, so writing to
 * the sockets takes at most half of the loop: with many clients (or cores busy with other work)
 * the deliveries that arrive meanwhile go out together, one write per client instead of several.
 * The time is the writes' own, system calls included, since each is written to the socket at once.
 */
const FANOUT_PACE = 2;
/** The pauses the pacing adds in one round of the clients are bounded: latency stays in tens of ms. */
const FANOUT_MAX_PAUSE_MS = 40;
export const DEFAULT_KEEP_ALIVE_MS = 10_000;
/** How long a client's catch-up reads again to reach what the fan-out had passed (reachJoin). */
const REACH_JOIN_MS = 10_000;
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
  /** The sequence number of the newest chunk of the fan-out this client has been handed. */
  seen: number;
  /**
   * The newest delivery the fan-out had passed when the client connected: it gets those from the
   * store, so its catch-up must reach this far (reachJoin). Undefined: none yet.
   */
  readonly joinedAt: Position | undefined;
}

/**
 * GET /events (spec 4.4 and 6). Every client hangs off the hub's one `$all` subscription: each
 * of the hub's batches is serialized once, and each client is written what it lacks in one write
 * when the fan-out's round comes to it. A client that sends
 * Last-Event-ID first subscribes (buffering live deliveries), then gets the replay from the
 * store, then the buffered deliveries newer than the last one replayed: no gap, no repeat. The
 * fan-out writes a client only what comes after it joined, so its replay reads until it has reached
 * the newest delivery the fan-out had passed by then (reachJoin).
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

      /** A client gone: it no longer counts among those the fan-out must still write. */
      const forget = (client: Client): void => {
        if (clients.delete(client) && client.seen < newest) lacking--;
      };

      const drop = (client: Client): void => {
        forget(client);
        client.writer.close();
      };

      /**
       * The fan-out: a cursor goes round the clients, a slice at a time, and writes each client
       * everything it has not been written yet, in one write. A delivery waits at most one round
       * for its client, where bursts written to all clients one after the other made it wait for
       * the burst being written, the pause after it and then its own client's turn in the next;
       * and the clients' reads come spread over the round instead of all at once. The hub's
       * batches are serialized once (a chunk each); the clients of a slice usually lack the same
       * chunks, joined once for them. A client that connects starts after the newest chunk: it
       * reads those before from the store (its head or its replay), as it always did.
       */
      const chunks: SerializedBatch[] = [];
      /** The sequence number of `chunks[0]` less one: chunk n is `chunks[n - dropped - 1]`. */
      let dropped = 0;
      /** The newest chunk's sequence number. */
      let newest = 0;
      /** The position of the newest delivery the hub has handed on, with clients to write or not. */
      let passed: Position | undefined;
      const ring: Client[] = [];
      let cursor = 0;
      /** Clients that lack the newest chunk: the cursor goes round until there are none. */
      let lacking = 0;
      let closing = false;
      let sliceTimer: NodeJS.Timeout | undefined;
      let sliceQueued = false;

      const schedule = (pause: number): void => {
        if (sliceTimer || sliceQueued || closing || lacking === 0) return;
        if (pause >= 1) {
          sliceTimer = setTimeout(() => {
            sliceTimer = undefined;
            slice();
          }, pause);
        } else {
          sliceQueued = true;
          setImmediate(() => {
            sliceQueued = false;
            slice();
          });
        }
      };

      /** Takes the clients gone out of the ring; the cursor stays on the same next client. */
      const compact = (): void => {
        let kept = 0;
        let at = cursor;
        for (let i = 0; i < ring.length; i++) {
          const client = ring[i]!;
          if (clients.has(client)) ring[kept++] = client;
          else if (i < cursor) at--;
        }
        ring.length = kept;
        cursor = at;
      };

      /** Back at the start of the ring: forget the clients gone and the chunks every client has. */
      const wrap = (): void => {
        cursor = 0;
        compact();
        let oldest = newest;
        for (const client of ring) if (client.seen < oldest) oldest = client.seen;
        if (oldest > dropped) {
          chunks.splice(0, oldest - dropped);
          dropped = oldest;
        }
      };

      const slice = (): void => {
        if (closing) return;
        const t = performance.now();
        /** The chunks after `joinedFrom`, joined once for the clients of this slice that lack just those. */
        let joinedFrom = -1;
        let joined: Uint8Array | undefined;
        let written = 0;
        while (written < fanoutSlice && lacking > 0) {
          if (cursor >= ring.length) {
            wrap();
            if (ring.length === 0) break;
          }
          const client = ring[cursor++]!;
          if (client.seen >= newest || !clients.has(client)) continue;
          written++;
          lacking--;
          const from = client.seen;
          client.seen = newest;
          if (client.mode === 'sync') {
            if (from !== joinedFrom) {
              joinedFrom = from;
              joined =
                newest - from === 1
                  ? chunks[from - dropped]!.joined
                  : Buffer.concat(chunks.slice(from - dropped).map((c) => c.joined));
            }
            client.writer.send(joined!);
          } else {
            for (let n = from + 1; n <= newest; n++) deliver(client, chunks[n - dropped - 1]!);
          }
        }
        if (lacking === 0) {
          // Every client has every chunk.
          chunks.length = 0;
          dropped = newest;
          return;
        }
        // The round's pauses together stay under FANOUT_MAX_PAUSE_MS.
        const slices = Math.max(1, Math.ceil(ring.length / fanoutSlice));
        schedule(Math.min((performance.now() - t) * (FANOUT_PACE - 1), FANOUT_MAX_PAUSE_MS / slices));
      };

      /** Frames with no per-client content: encoded once, the same bytes to every socket. */
      const broadcast = (frame: string): void => {
        const bytes = Buffer.from(frame);
        for (const client of clients) client.writer.send(bytes);
      };

      subscriptions.push(
        hub.batches$.subscribe((batch) => {
          if (batch.length > 0) passed = batch[batch.length - 1]!.position;
          if (clients.size === 0) return;
          chunks.push(serializeBatch(batch));
          newest++;
          lacking = clients.size;
          schedule(0);
        }),
        hub.status$.subscribe((status) => broadcast(sseFrame('status', status))),
        // A bare signal (no id, no data of anyone's): the console's todo screens fetch their rows.
        hub.todoChanges$.subscribe(() => broadcast(sseFrame('todos-changed', {}))),
      );
      const keepAlive = setInterval(() => broadcast(': keep-alive\n\n'), keepAliveMs);
      keepAlive.unref();

      app.addHook('preClose', async () => {
        closing = true;
        clearTimeout(sliceTimer);
        clearInterval(keepAlive);
        for (const s of subscriptions) s.unsubscribe();
        for (const client of clients) client.writer.close();
        clients.clear();
      });

      app.get('/events', async (request: FastifyRequest, reply) => {
        const retry = await deps.retryMs().catch(() => 3000);
        reply.hijack();
        const res = reply.raw;
        // The stream ends when the connection does: no chunked framing, so each write is one plain
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
        // (connectionCorkNT), so the fan-out's pacing timed less than a tenth of what it cost and every write
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
            forget(client);
            deps.logger.info('stream: slow client dropped');
          }),
          mode: 'buffering',
          buffer: [],
          buffered: 0,
          lastSent: 'start',
          seen: newest,
          joinedAt: passed,
        };
        // Only a round takes the clients gone out of the ring: with no deliveries, clients that come
        // and go would pile up in it (their sockets with them).
        if (ring.length >= 2 * clients.size + 64) compact();
        clients.add(client);
        ring.push(client);
        // The connection's own close: a request that waited behind another response on its connection
        // may have had its 'close' already.
        socket.once('close', () => {
          forget(client);
          client.writer.close();
        });
        client.writer.send(`retry: ${retry}\n\n`);

        try {
          await catchUp(client, resumePoint(request));
          await reachJoin(client);
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
          const head = atLeastJoined(client, await hub.headPosition());
          client.lastSent = head;
          client.writer.send(sseFrame('ready', { position: head }, head));
          return;
        }
        const result = await hub.replay(lastEventId, replayBound);
        if (
          result.kind === 'events' &&
          result.events.length === 0 &&
          !(await notAhead(client, lastEventId))
        ) {
          return reset(client, 'unknown_position');
        }
        if (result.kind === 'reset') return reset(client, result.reason);
        client.lastSent = lastEventId;
        sendReplayed(client, result.events);
      }

      /** Replayed deliveries, written whole; live delivery resumes after the last of them. */
      function sendReplayed(client: Client, events: readonly LiveDelivery[]): void {
        if (events.length === 0) return;
        client.writer.sendCatchUp(serializeBatch(events).joined);
        client.lastSent = events[events.length - 1]!.position;
      }

      /**
       * A head read may stand behind a delivery the fan-out has already passed: the store's `$all`
       * reads stop below any transaction they cannot tell is no writer of events, and one that ends
       * between a read's snapshot and its look at the lock table bounds that read (reads.ts). Such a
       * delivery was handed on before the client joined; the client starts after it.
       */
      function atLeastJoined(client: Client, head: Position): Position {
        const { joinedAt } = client;
        return joinedAt !== undefined && hub.comparePositions(joinedAt, head) > 0 ? joinedAt : head;
      }

      /**
       * The catch-up must reach the newest delivery the fan-out had passed when the client joined,
       * since the fan-out writes it only what comes after. A replay read can stop short of it (see
       * atLeastJoined): read again, briefly, until it is there. The bound that hid it lasts as long
       * as one transaction somewhere in the cluster, and the hub's own read had already passed it.
       */
      async function reachJoin(client: Client): Promise<void> {
        const { joinedAt } = client;
        if (joinedAt === undefined || client.lastSent === 'start') return;
        let wait = 5;
        const deadline = performance.now() + REACH_JOIN_MS;
        while (hub.comparePositions(client.lastSent, joinedAt) < 0) {
          if (client.writer.closed) return;
          if (performance.now() > deadline) {
            deps.logger.warn(
              { after: client.lastSent, joinedAt },
              'stream: catch-up did not reach the live fan-out',
            );
            return reset(client, 'unknown_position');
          }
          await new Promise((resolve) => setTimeout(resolve, wait));
          wait = Math.min(wait * 2, 100);
          const result = await hub.replay(client.lastSent, replayBound);
          if (result.kind === 'reset') return reset(client, result.reason);
          sendReplayed(client, result.events);
        }
      }

      /** A Last-Event-ID past the head (another database, a wiped store) would hide every live event. */
      async function notAhead(client: Client, position: Position): Promise<boolean> {
        try {
          // A position the fan-out has passed is no stranger, though a head read may stop short of it.
          return hub.comparePositions(position, atLeastJoined(client, await hub.headPosition())) <= 0;
        } catch {
          return false;
        }
      }

      async function reset(client: Client, reason: string): Promise<void> {
        const head = atLeastJoined(client, await hub.headPosition());
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
