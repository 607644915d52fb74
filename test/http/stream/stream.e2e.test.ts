import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codehostSignature } from '../../support/senders.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import {
  CODEHOST_SECRET,
  postForm,
  sendCodehost,
  startTestServer,
  type TestServer,
  until,
} from '../ui/support.ts';
import {
  appendDeliveries,
  controllableEventSource,
  deliveryIds,
  type Received,
  readBodyUntil,
  readUntil,
  type Summary,
} from './support.ts';

const STREAM_LOCK_CLASS = 0x686b6c73; // 'hkls': es_append_batch's stream locks, the live bound's writers

const hasPg = await postgresAvailable();

describe.runIf(hasPg)('GET /events (Server-Sent Events)', () => {
  let db: TestDatabase;
  let s: TestServer;

  beforeAll(async () => {
    db = await createTestDatabase();
    s = await startTestServer({ databaseUrl: db.url });
    const res = await postForm(s.url, '/settings', { sse_retry_ms: '300' });
    expect(res.status).toBe(200);
  });

  afterAll(async () => {
    await s?.close();
    await db?.drop();
  });

  it('advertises retry: from sse_retry_ms and gives a fresh client its resume point', async () => {
    const controller = new AbortController();
    const res = await fetch(`${s.url}/events`, { signal: controller.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('cache-control')).toMatch(/no-cache/);
    // Close-delimited: each burst is one plain socket write, no chunk framing.
    expect(res.headers.get('transfer-encoding')).toBeNull();
    expect(res.headers.get('connection')).toBe('close');
    const text = await readBodyUntil(res, (t) => t.includes('event: ready'));
    controller.abort();
    expect(text.startsWith('retry: 300\n\n')).toBe(true);
    expect(text).toMatch(/id: \d+:\d+\nevent: ready\n/);
  });

  it('sends event-received with the EventSummary of each accepted delivery, id the global position', async () => {
    const client = controllableEventSource(`${s.url}/events`);
    try {
      await client.waitFor((all) => all.some((r) => r.type === 'ready'));
      const ack = await sendCodehost(s.url, { n: 1 }, { event: 'push' });
      await client.waitFor((all) => all.some((r) => r.type === 'event-received'));
      const [got] = client.events('event-received');
      expect(got!.data).toEqual({
        id: ack.id,
        provider: 'codehost',
        event_type: 'push',
        trust_mode: 'signed',
        verified: true,
        payload_size: JSON.stringify({ n: 1 }).length,
        received_at: ack.received_at,
      } satisfies Summary);
      expect(got!.lastEventId).toMatch(/^\d+:\d+$/);
      // A status snapshot comes on connect and on the idle -> receiving move.
      await client.waitFor((all) => all.some((r) => r.type === 'status'));
      const status = client.events('status').at(-1)!.data as {
        connection: string;
        providers: { name: string }[];
      };
      expect(['receiving', 'idle']).toContain(status.connection);
      expect(status.providers.map((p) => p.name)).toContain('codehost');
    } finally {
      client.close();
    }
  });

  it('sends event-received for a generic provider delivery too', async () => {
    const json = { accept: 'application/json', 'sec-fetch-site': 'same-origin' };
    const created = await postForm(s.url, '/providers', { name: 'streamed', trust_mode: 'token' }, json);
    expect(created.status).toBe(201);
    const { token } = (await created.json()) as { token: string };
    const enabled = await postForm(s.url, '/providers/generic%3Astreamed/enabled', { enabled: 'true' }, json);
    expect(enabled.status).toBe(200);
    const client = controllableEventSource(`${s.url}/events`);
    try {
      await client.waitFor((all) => all.some((r) => r.type === 'ready'));
      const res = await fetch(`${s.url}/webhooks/generic/streamed`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'x-hookline-event': 'build.finished',
        },
        body: JSON.stringify({ ok: true }),
      });
      expect(res.status).toBe(202);
      const ack = (await res.json()) as { id: number; received_at: string };
      await client.waitFor((all) => all.some((r) => r.type === 'event-received'));
      expect(client.events('event-received').map((r) => r.data)).toEqual([
        {
          id: ack.id,
          provider: 'generic:streamed',
          event_type: 'build.finished',
          trust_mode: 'token',
          verified: false,
          payload_size: JSON.stringify({ ok: true }).length,
          received_at: ack.received_at,
        } satisfies Summary,
      ]);
    } finally {
      client.close();
    }
  });

  it('resumes with Last-Event-ID after 100 deliveries sent while disconnected: each exactly once', async () => {
    const client = controllableEventSource(`${s.url}/events`);
    try {
      const first = await sendCodehost(s.url, { before: true });
      await client.waitFor((all) =>
        all.some((r) => r.type === 'event-received' && (r.data as Summary).id === first.id),
      );
      const resumeFrom = client.events('event-received').at(-1)!.lastEventId;

      client.goOffline();
      const missed: number[] = [];
      for (let i = 0; i < 100; i++) missed.push((await sendCodehost(s.url, { missed: i })).id);
      client.online();
      // More arrive while the client replays: they must neither be lost nor doubled.
      const during = Promise.all(Array.from({ length: 20 }, (_, i) => sendCodehost(s.url, { during: i })));
      const duringIds = (await during).map((a) => a.id);

      const expected = [first.id, ...missed, ...duringIds].sort((a, b) => a - b);
      await client.waitFor((all) => all.filter((r) => r.type === 'event-received').length >= expected.length);
      await new Promise((r) => setTimeout(r, 500)); // anything extra would show up now
      const ids = client.events('event-received').map((r) => (r.data as Summary).id);
      expect(ids).toEqual(expected);
      expect(new Set(ids).size).toBe(ids.length);
      expect(client.requests.some((r) => r.lastEventId === resumeFrom)).toBe(true);
      expect(client.events('reset')).toHaveLength(0);
    } finally {
      client.close();
    }
  });

  it('starts a page at the log position its rows were read at: a delivery between render and connect arrives once', async () => {
    for (const path of ['/log', '/']) {
      const shown = await sendCodehost(s.url, { shown: path });
      const html = await until(async () => {
        const page = await (await fetch(`${s.url}${path}`)).text();
        return page.includes(`data-id="${shown.id}"`) ? page : undefined;
      });
      const after = /<body [^>]*data-stream-after="([^"]+)"/.exec(html)?.[1];
      expect(after, path).toMatch(/^\d+:\d+$/);
      // Arrives after the render and before the stream connects: a stream from the head misses it.
      const between = await sendCodehost(s.url, { between: path });
      const fromHead = await readUntil(`${s.url}/events`, (t) => t.includes('event: ready'));
      expect(deliveryIds(fromHead)).toEqual([]);
      const text = await readUntil(`${s.url}/events?after=${encodeURIComponent(after!)}`, (t) =>
        deliveryIds(t).includes(between.id),
      );
      // Exactly what the page did not show: the delivery it rendered is not sent again.
      expect(deliveryIds(text), path).toEqual([between.id]);
      expect(text).not.toContain('event: reset');
      // A reconnect repeats the URL: its Last-Event-ID wins over the page's older position.
      const lastId = /id: (\d+:\d+)\nevent: event-received/.exec(text)![1]!;
      const later = await sendCodehost(s.url, { later: path });
      const resumed = await readUntil(
        `${s.url}/events?after=${encodeURIComponent(after!)}`,
        (t) => deliveryIds(t).includes(later.id),
        { 'last-event-id': lastId },
      );
      expect(deliveryIds(resumed), path).toEqual([later.id]);
    }
  });

  it('a client that joins after the fan-out passed a delivery the store does not show yet still gets it', async () => {
    // A read of `$all` stops below a transaction it cannot tell is no writer of events (one that
    // ends between the read's snapshot and its look at the lock table, anywhere in the cluster).
    // Here a session takes a transaction id before the delivery, and a stream's lock only after
    // the hub has passed it: every read from then on stops below it, as that race makes one read do.
    const held = new pg.Client({ connectionString: db.url });
    await held.connect();
    const watcher = controllableEventSource(`${s.url}/events`);
    try {
      const delivered = (id: number) => (all: readonly Received[]) =>
        all.find((r) => r.type === 'event-received' && (r.data as Summary).id === id);
      await watcher.waitFor((all) => all.some((r) => r.type === 'ready'));
      const before = await sendCodehost(s.url, { join: 'before' });
      await watcher.waitFor((all) => delivered(before.id)(all) !== undefined);
      const beforeAt = delivered(before.id)(watcher.received)!.lastEventId;
      await held.query('begin');
      await held.query('select pg_current_xact_id()');
      const passed = await sendCodehost(s.url, { join: 'passed' });
      // The hub has passed it: the watcher got it.
      await watcher.waitFor((all) => delivered(passed.id)(all) !== undefined);
      const passedAt = delivered(passed.id)(watcher.received)!.lastEventId;
      await held.query('select pg_advisory_xact_lock($1, 1)', [STREAM_LOCK_CLASS]);
      expect(await s.runtime.store.headPosition()).toBe(beforeAt);
      // Its position is no stranger to the stream, though the head read stops short of it.
      const fromPassed = await readUntil(`${s.url}/events`, (t) => t.includes('event: status'), {
        'last-event-id': passedAt,
      });
      expect(fromPassed).not.toContain('event: reset');
      expect(deliveryIds(fromPassed)).toEqual([]);
      // A fresh client starts after it.
      const fresh = await readUntil(`${s.url}/events`, (t) => t.includes('event: ready'));
      expect(fresh).toContain(`id: ${passedAt}\nevent: ready`);
      const release = setTimeout(() => void held.query('rollback'), 500);
      try {
        const text = await readUntil(`${s.url}/events`, (t) => deliveryIds(t).includes(passed.id), {
          'last-event-id': beforeAt,
        });
        expect(deliveryIds(text)).toEqual([passed.id]);
      } finally {
        clearTimeout(release);
      }
    } finally {
      watcher.es.close();
      await held.end();
    }
  });

  it('resets a client whose ?after= is no position: too long, repeated or unknown', async () => {
    const head = await s.runtime.store.headPosition();
    for (const query of [`after=${'9'.repeat(200)}`, `after=${head}&after=${head}`, 'after=garbage']) {
      const text = await readUntil(`${s.url}/events?${query}`, (t) => t.includes('event: reset'));
      expect(text, query).toContain('"reason":"unknown_position"');
    }
  });

  it('tells a client too far behind to reset, then continues live from the head', async () => {
    const head = await s.runtime.store.headPosition();
    await appendDeliveries(s.runtime.store, 1001);
    const client = controllableEventSource(`${s.url}/events`);
    const headers = { 'last-event-id': head };
    client.es.close();
    const res = await fetch(`${s.url}/events`, { headers });
    const text = await readBodyUntil(res, (t) => t.includes('event: reset'));
    expect(text).toMatch(
      /id: (\d+:\d+)\nevent: reset\ndata: \{"reason":"beyond_replay_bound","replay_bound":1000\}/,
    );
    expect(text).not.toContain('event: event-received');
    const newHead = /id: (\d+:\d+)\nevent: reset/.exec(text)![1]!;
    expect(s.runtime.store.comparePositions(newHead, head)).toBeGreaterThan(0);
  });

  it('resets a client whose Last-Event-ID is not a position of this store', async () => {
    for (const bad of ['garbage', '99999999999:1']) {
      const res = await fetch(`${s.url}/events`, { headers: { 'last-event-id': bad } });
      const text = await readBodyUntil(res, (t) => t.includes('event: reset'));
      expect(text).toContain('"reason":"unknown_position"');
    }
  });

  it('multicasts every delivery once to each of several clients', async () => {
    const clients = [0, 1, 2].map(() => controllableEventSource(`${s.url}/events`));
    try {
      await Promise.all(clients.map((c) => c.waitFor((all) => all.some((r) => r.type === 'ready'))));
      const acks = await Promise.all(Array.from({ length: 10 }, (_, i) => sendCodehost(s.url, { fan: i })));
      const expected = acks.map((a) => a.id).sort((a, b) => a - b);
      for (const c of clients) {
        await c.waitFor((all) => all.filter((r) => r.type === 'event-received').length >= expected.length);
        expect(c.events('event-received').map((r) => (r.data as Summary).id)).toEqual(expected);
      }
    } finally {
      for (const c of clients) c.close();
    }
  });

  it('streams on a connection whose earlier response is still being sent (pipelined, or reused at once)', async () => {
    // Node queues a response behind the one its connection is still sending and gives it the socket
    // only when that one finishes; a browser or a pooled client reusing a connection at once meets
    // the same. Here the first is a delivery, answered after its commit: the stream must start
    // once the 202 is out, not hang with its head and nothing else.
    const { port } = new URL(s.url);
    const socket = connect(Number(port), '127.0.0.1');
    try {
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => {
        text += d;
      });
      const body = JSON.stringify({ pipelined: true });
      const signature = await codehostSignature(CODEHOST_SECRET, body);
      socket.write(
        'POST /webhooks/codehost HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n' +
          `x-hub-signature-256: ${signature}\r\nx-codehost-event: push\r\ncontent-length: ${body.length}\r\n\r\n${body}` +
          'GET /events HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n',
      );
      await until(async () => (text.includes('event: ready') ? true : undefined), 10_000);
      expect(text).toMatch(/^HTTP\/1\.1 202 /);
      const second = text.indexOf('HTTP/1.1 200 ');
      expect(second).toBeGreaterThan(0);
      expect(text.slice(second)).toMatch(
        /text\/event-stream[\s\S]*\r\n\r\nretry: \d+\n\n[\s\S]*event: ready\n/,
      );
    } finally {
      socket.destroy();
    }
  });
});

describe.runIf(hasPg)('GET /events, a burst written in slices of two clients', () => {
  let db: TestDatabase;
  let s: TestServer;

  beforeAll(async () => {
    db = await createTestDatabase();
    s = await startTestServer({ databaseUrl: db.url, app: { stream: { fanoutSlice: 2 } } });
  });

  afterAll(async () => {
    await s?.close();
    await db?.drop();
  });

  it('gives each of five clients every delivery once, in order, and those joining meanwhile a tail', async () => {
    const first = [0, 1, 2, 3, 4].map(() => controllableEventSource(`${s.url}/events`));
    const later: ReturnType<typeof controllableEventSource>[] = [];
    try {
      await Promise.all(first.map((c) => c.waitFor((all) => all.some((r) => r.type === 'ready'))));
      const send = (from: number) =>
        Promise.all(Array.from({ length: 10 }, (_, i) => sendCodehost(s.url, { slice: from + i })));
      const acks = await send(0);
      // Two more clients connect while deliveries are being written; each starts at the head.
      for (const from of [10, 20]) {
        const c = controllableEventSource(`${s.url}/events`);
        later.push(c);
        acks.push(...(await send(from)));
        await c.waitFor((all) => all.some((r) => r.type === 'ready'));
      }
      acks.push(...(await send(30)));
      const expected = acks.map((a) => a.id).sort((a, b) => a - b);
      for (const c of first) {
        await c.waitFor((all) => all.filter((r) => r.type === 'event-received').length >= expected.length);
        expect(c.events('event-received').map((r) => (r.data as Summary).id)).toEqual(expected);
      }
      // A later client gets a tail of them: no gap, no repeat, in order.
      const last = expected[expected.length - 1]!;
      for (const c of later) {
        await c.waitFor((all) =>
          all.some((r) => r.type === 'event-received' && (r.data as Summary).id === last),
        );
        const ids = c.events('event-received').map((r) => (r.data as Summary).id);
        expect(ids).toEqual(expected.slice(expected.length - ids.length));
      }
    } finally {
      for (const c of [...first, ...later]) c.close();
    }
  });
});

describe.runIf(hasPg)('GET /events, clients that come and go while no delivery arrives', () => {
  let db: TestDatabase;
  let s: TestServer;

  beforeAll(async () => {
    db = await createTestDatabase();
    s = await startTestServer({ databaseUrl: db.url });
  });

  afterAll(async () => {
    await s?.close();
    await db?.drop();
  });

  it('keeps nothing of them: their sockets can be collected', async () => {
    // The fan-out's ring of clients is only swept by a round, which needs a delivery.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    let collected = 0;
    const registry = new FinalizationRegistry(() => {
      collected++;
    });
    const track = (request: IncomingMessage) => {
      if (request.url === '/events') registry.register(request.socket, null);
    };
    s.app.server.on('request', track);
    try {
      for (let i = 0; i < 200; i++) {
        await readUntil(`${s.url}/events`, (t) => t.includes('event: ready'));
        await until(() => s.app.streamClients?.() === 0);
      }
    } finally {
      s.app.server.off('request', track);
    }
    for (let i = 0; i < 20 && collected < 100; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(collected).toBeGreaterThanOrEqual(100);
  });
});
