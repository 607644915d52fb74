import { randomUUID } from 'node:crypto';
import { EventSource } from 'eventsource';
import { DELIVERIES_STREAM, DELIVERY_RECEIVED } from '../../../src/domain/delivery/events.ts';
import type { EventStore } from '../../../src/eventstore/port.ts';

export interface Received {
  readonly type: string;
  readonly data: unknown;
  readonly lastEventId: string;
}

/**
 * An `eventsource` client whose connection the test can cut (the stream ends, as when a proxy or
 * the network drops it) and keep offline (connects fail), so the client's own reconnect logic,
 * with its Last-Event-ID, is what resumes.
 */
export function controllableEventSource(
  url: string,
  types: readonly string[] = ['event-received', 'status', 'reset', 'ready'],
) {
  let offline = false;
  let cutCurrent: (() => void) | undefined;
  const requests: { lastEventId: string | null }[] = [];
  const received: Received[] = [];
  const listeners = new Set<() => void>();

  const es = new EventSource(url, {
    fetch: async (input, init) => {
      const headers = new Headers(init?.headers as HeadersInit | undefined);
      requests.push({ lastEventId: headers.get('last-event-id') });
      if (offline) throw new TypeError('offline (test)');
      const res = await fetch(input, init as RequestInit);
      if (!res.body) return res;
      const reader = res.body.getReader();
      let controllerRef: ReadableStreamDefaultController<Uint8Array> | undefined;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controllerRef = controller;
        },
        async pull(controller) {
          try {
            const { done, value } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(value);
          } catch {
            try {
              controller.close();
            } catch {}
          }
        },
        cancel() {
          void reader.cancel().catch(() => {});
        },
      });
      cutCurrent = () => {
        void reader.cancel().catch(() => {});
        try {
          controllerRef?.close();
        } catch {}
      };
      return new Response(body, { status: res.status, headers: res.headers });
    },
  });
  for (const type of types) {
    es.addEventListener(type, (e) => {
      const m = e as MessageEvent;
      received.push({ type, data: JSON.parse(String(m.data)), lastEventId: m.lastEventId });
      for (const l of listeners) l();
    });
  }

  const waitFor = (predicate: (all: readonly Received[]) => boolean, timeoutMs = 15_000) =>
    new Promise<void>((resolve, reject) => {
      if (predicate(received)) return resolve();
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`stream condition not met in ${timeoutMs} ms (${received.length} messages)`));
      }, timeoutMs);
      const check = () => {
        if (!predicate(received)) return;
        clearTimeout(timer);
        listeners.delete(check);
        resolve();
      };
      listeners.add(check);
    });

  return {
    es,
    received,
    requests,
    events: (type: string) => received.filter((r) => r.type === type),
    waitFor,
    /** Ends the current connection and keeps the client offline until `online()`. */
    goOffline() {
      offline = true;
      cutCurrent?.();
    },
    online() {
      offline = false;
    },
    close: () => es.close(),
  };
}

export interface Summary {
  id: number;
  provider: string;
  event_type: string | null;
  trust_mode: string;
  verified: boolean;
  payload_size: number;
  received_at: string;
}

/**
 * Appends `n` deliveries in one append (far faster than n requests), like the recorder writes them.
 * `eventType` sets the size of each `event-received` frame (it is part of the summary).
 */
export async function appendDeliveries(store: EventStore, n: number, eventType = 'bulk') {
  const encoder = new TextEncoder();
  const events = Array.from({ length: n }, (_, i) => {
    const payload = encoder.encode(JSON.stringify({ bulk: i }));
    return {
      id: randomUUID(),
      type: DELIVERY_RECEIVED,
      data: payload,
      contentType: 'application/octet-stream' as const,
      metadata: encoder.encode(
        JSON.stringify({
          provider: 'codehost',
          family: 'webhook',
          trust_mode: 'signed',
          verified: true,
          verify_detail: 'sha256',
          event_type: eventType,
          external_id: null,
          content_type: 'application/json',
          source_ip: '127.0.0.1',
          headers: {},
          received_at: new Date().toISOString(),
          payload_size: payload.byteLength,
        }),
      ),
    };
  });
  return store.append(DELIVERIES_STREAM, events);
}

/**
 * Reads a response body until `done` holds of the text so far. A body that ends first is an error,
 * never a loop: a reader at its end answers at once, and spinning on it starves the event loop
 * (and with it every socket of the test's server, its PostgreSQL connections included).
 */
export async function readBodyUntil(
  res: Response,
  done: (text: string) => boolean,
  read: { text: string } = { text: '' },
): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  while (!done(read.text)) {
    const chunk = await reader.read();
    if (chunk.done) throw new Error(`the stream ended early: ${read.text}`);
    read.text += decoder.decode(chunk.value, { stream: true });
  }
  await reader.cancel();
  return read.text;
}

/** Reads a stream until `done` holds for the text so far (at most 15 s); then disconnects. */
export async function readUntil(
  url: string,
  done: (text: string) => boolean,
  headers: Record<string, string> = {},
) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 15_000);
  const read = { text: '' };
  try {
    const res = await fetch(url, { headers, signal: controller.signal });
    return await readBodyUntil(res, done, read);
  } catch (err) {
    // Which stream, and what it had sent: a timeout alone says neither.
    if (!controller.signal.aborted) throw err;
    throw new Error(
      `${url} (${JSON.stringify(headers)}) sent nothing awaited in 15 s; it sent: ${read.text}`,
      {
        cause: err,
      },
    );
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

export const deliveryIds = (text: string): number[] =>
  [...text.matchAll(/event: event-received\ndata: (.*)\n/g)].map((m) => (JSON.parse(m[1]!) as Summary).id);
