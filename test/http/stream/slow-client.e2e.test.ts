import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../ui/support.ts';
import { appendDeliveries, controllableEventSource, readUntil, type Summary } from './support.ts';

/** Frames of about 2.3 KB: the event type travels in every summary (and stays under an index row's limit). */
const BIG_TYPE = Array.from({ length: 2000 }, (_, i) => String.fromCharCode(97 + ((i * 7) % 26))).join('');
/**
 * 5,000 of them, about 11 MB: well past what the kernel buffers for a socket nobody reads (about
 * 4 MB on Linux's defaults) plus the stream's bound below.
 */
const TOTAL = 5_000;
/** Small appends, each awaited by the client that keeps up: no burst is near the buffer bound alone. */
const PER_APPEND = 50;
const MAX_BUFFER = 256 * 1024;

interface Frame {
  readonly id: string;
  readonly summary: Summary;
}

/** The complete `event-received` frames of a text; a frame cut by a dropped connection is not one. */
const frames = (text: string): Frame[] =>
  [...text.matchAll(/id: (\S+)\nevent: event-received\ndata: (.*)\n\n/g)].map((m) => ({
    id: m[1]!,
    summary: JSON.parse(m[2]!) as Summary,
  }));

/**
 * A client that connects and then stops reading (its socket is paused, so the kernel's buffers fill
 * up and the server's writes queue). `readAll` starts reading again and resolves with everything it
 * gets until the connection ends.
 */
function stalledClient(url: string) {
  let response: http.IncomingMessage | undefined;
  const connected = new Promise<void>((resolve, reject) => {
    const request = http.get(url, (res) => {
      res.pause();
      response = res;
      resolve();
    });
    request.on('error', reject);
  });
  return {
    connected,
    readAll: () =>
      new Promise<{ text: string; ended: boolean }>((resolve) => {
        let text = '';
        response!.setEncoding('utf8');
        response!.on('data', (chunk: string) => {
          text += chunk;
        });
        response!.on('error', () => {});
        response!.on('close', () => resolve({ text, ended: true }));
        response!.resume();
      }),
  };
}

describe('a slow stream client, and an idle one (GET /events)', () => {
  let s: TestServer;

  beforeAll(async () => {
    s = await startTestServer({
      app: { stream: { keepAliveMs: 100, maxBufferBytes: MAX_BUFFER, replayBound: TOTAL } },
    });
  });

  afterAll(async () => {
    await s?.close();
  });

  it('sends keep-alive comments on an idle stream', async () => {
    const started = Date.now();
    const text = await readUntil(`${s.url}/events`, (t) => t.split(': keep-alive\n\n').length > 4);
    expect(text).toContain('event: ready');
    expect(text).not.toContain('event: event-received');
    // Four of them at the 100 ms set for this server: they come from the interval, not a burst.
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
  });

  it('drops a client that stops reading once its buffer is full; it resumes with Last-Event-ID, no gap, no repeat', {
    timeout: 180_000,
  }, async () => {
    const slow = stalledClient(`${s.url}/events`);
    await slow.connected;
    const fast = controllableEventSource(`${s.url}/events`);
    await fast.waitFor((all) => all.some((r) => r.type === 'ready'));
    let received = 0;
    const counted = fast.waitFor((all) => {
      received = all.filter((r) => r.type === 'event-received').length;
      return received >= TOTAL;
    }, 90_000);
    for (let sent = PER_APPEND; sent <= TOTAL; sent += PER_APPEND) {
      await appendDeliveries(s.runtime.store, PER_APPEND, BIG_TYPE);
      await fast.waitFor(() => received >= sent, 20_000);
    }
    await counted;
    const expected = fast.events('event-received').map((r) => (r.data as Summary).id);
    fast.close();
    expect(expected).toEqual(Array.from({ length: TOTAL }, (_, i) => i + 1));

    // The stalled client got a part, then its connection ended: it was dropped.
    const { text, ended } = await slow.readAll();
    expect(ended).toBe(true);
    const got = frames(text);
    expect(got.length).toBeGreaterThan(0);
    expect(got.length).toBeLessThan(TOTAL);
    expect(got.map((f) => f.summary.id)).toEqual(expected.slice(0, got.length));

    // It reconnects with its last complete id, as EventSource does, and gets exactly the rest.
    const lastEventId = got.at(-1)!.id;
    // Until the last frame is whole: a read can end inside it, after its id but before its blank line.
    const lastWhole = (t: string) => {
      const at = t.indexOf(`"id":${TOTAL},`);
      return at >= 0 && t.includes('\n\n', at);
    };
    const rest = await readUntil(`${s.url}/events`, lastWhole, {
      'last-event-id': lastEventId,
    });
    expect(rest).not.toContain('event: reset');
    expect([...got, ...frames(rest)].map((f) => f.summary.id)).toEqual(expected);
  });
});
