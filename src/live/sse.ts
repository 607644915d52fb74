import type { Position } from '../eventstore/port.ts';
import type { LiveDelivery } from './summary.ts';

/**
 * One SSE message. JSON.stringify never emits a raw line break, so the data is always one `data:`
 * line; ids are store positions (ASCII, no line breaks).
 */
export function sseFrame(event: string, data: unknown, id?: Position): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export const deliveryFrame = (d: LiveDelivery): string => sseFrame('event-received', d.summary, d.position);

/** A batch serialized once for every client: each frame, and all of them joined. */
export interface SerializedBatch {
  readonly items: readonly { readonly position: Position; readonly frame: string }[];
  /** Every frame, encoded once: each client's socket gets the same bytes. */
  readonly joined: Uint8Array;
}

export function serializeBatch(batch: readonly LiveDelivery[]): SerializedBatch {
  const items = batch.map((d) => ({ position: d.position, frame: deliveryFrame(d) }));
  return { items, joined: Buffer.from(items.map((i) => i.frame).join('')) };
}

/** What a client's socket must offer: Node's ServerResponse does. */
export interface SseSink {
  write(chunk: string | Uint8Array): boolean;
  readonly writableLength: number;
  destroy(): void;
  end(): void;
}

export interface SseWriter {
  /** False once the client is gone (closed, or dropped for being too slow). */
  send(chunk: string | Uint8Array): boolean;
  /**
   * A reconnecting client's replay, written whole: it is bounded by the replay bound already, and
   * may be larger than the buffer bound, which then applies on top of what of it is still unsent.
   * Counted like the live writes, a replay past the buffer bound would drop the client on every
   * reconnect, for ever.
   */
  sendCatchUp(chunk: string | Uint8Array): boolean;
  close(): void;
  readonly closed: boolean;
}

/**
 * Slow-client policy: what the socket has not taken yet stays in Node's write buffer; once that
 * holds more than `maxBufferBytes` (plus what a catch-up left unsent), the client is dropped (its
 * socket destroyed). It reconnects with Last-Event-ID and resumes from the replay without a gap
 * when it missed no more than the replay bound, else it gets a `reset`.
 */
export function createSseWriter(sink: SseSink, maxBufferBytes: number, onDrop: () => void): SseWriter {
  let closed = false;
  /** What a catch-up left unsent when it was written; forgotten once the backlog is back under the bound. */
  let allowance = 0;
  return {
    get closed() {
      return closed;
    },
    send(chunk) {
      if (closed) return false;
      sink.write(chunk);
      const unsent = sink.writableLength;
      if (unsent <= maxBufferBytes) allowance = 0;
      else if (unsent > maxBufferBytes + allowance) {
        closed = true;
        sink.destroy();
        onDrop();
        return false;
      }
      return true;
    },
    sendCatchUp(chunk) {
      if (closed) return false;
      sink.write(chunk);
      allowance = sink.writableLength;
      return true;
    },
    close() {
      if (closed) return;
      closed = true;
      sink.end();
    },
  };
}
