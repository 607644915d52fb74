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
  close(): void;
  readonly closed: boolean;
}

/**
 * Slow-client policy: what the socket has not taken yet stays in Node's write buffer; once that
 * holds more than `maxBufferBytes`, the client is dropped (its socket destroyed). It reconnects
 * with Last-Event-ID and resumes from the replay without a gap.
 */
export function createSseWriter(sink: SseSink, maxBufferBytes: number, onDrop: () => void): SseWriter {
  let closed = false;
  return {
    get closed() {
      return closed;
    },
    send(chunk) {
      if (closed) return false;
      sink.write(chunk);
      if (sink.writableLength > maxBufferBytes) {
        closed = true;
        sink.destroy();
        onDrop();
        return false;
      }
      return true;
    },
    close() {
      if (closed) return;
      closed = true;
      sink.end();
    },
  };
}
