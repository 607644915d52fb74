import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveryDetail } from '../../src/deliveries/read.ts';
import { jsonEvent } from '../../src/eventstore/codec.ts';
import { reservationStream } from '../../src/ingest/recorder.ts';
import {
  createTestDatabase,
  PG_ADMIN_URL,
  postgresAvailable,
  type TestDatabase,
} from '../support/services.ts';
import { codehostHeaders, type Hookline, startHookline } from './harness.ts';

const hasPg = await postgresAvailable();

describe.runIf(hasPg)('ingestion on PostgreSQL', () => {
  let db: TestDatabase;
  let h: Hookline;
  let base = '';

  beforeAll(async () => {
    db = await createTestDatabase('hookline_ingest');
    h = await startHookline({ DATABASE_URL: db.url, HOOKLINE_MAX_BODY_BYTES: '4096' });
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await h?.close();
    await db?.drop();
  });

  const send = (body: string, headers: Record<string, string>) =>
    fetch(`${base}/webhooks/codehost`, { method: 'POST', body, headers });

  it('accepts a signed delivery over a real port', async () => {
    const body = JSON.stringify({ over: 'tcp' });
    const res = await send(body, await codehostHeaders(body));
    expect(res.status).toBe(202);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toMatchObject({ provider: 'codehost', verified: true });
  });

  it('stores 20 simultaneous copies of one external id once, answering all with the same id', async () => {
    const body = JSON.stringify({ storm: true });
    const headers = await codehostHeaders(body, { 'x-github-delivery': randomUUID() });
    const before = await h.deliveries();
    const answers = await Promise.all(Array.from({ length: 20 }, () => send(body, headers)));
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(202));
    const ids = new Set((await Promise.all(answers.map((r) => r.json()))).map((a: { id: number }) => a.id));
    expect(ids.size).toBe(1);
    expect(await h.deliveries()).toBe(before + 1);
  });

  it('answers 413 while reading a chunked body without Content-Length', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${base}/webhooks/codehost`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      const chunk = 'x'.repeat(1024);
      let n = 0;
      const pump = () => {
        while (n < 8) {
          n++;
          if (!req.write(chunk)) return void req.once('drain', pump);
        }
        req.end();
      };
      pump();
    });
    expect(status).toBe(413);
  });

  it('takes over a reservation whose delivery never landed (crash between the two appends)', async () => {
    const delivery = randomUUID();
    const orphan = randomUUID();
    await h.runtime.store.append(
      reservationStream('codehost', delivery),
      [
        jsonEvent('DeliveryReserved', {
          event_uuid: orphan,
          provider: 'codehost',
          at: new Date(Date.now() - 3_600_000).toISOString(),
        }),
      ],
      { expectedRevision: 'no_stream' },
    );
    const body = JSON.stringify({ orphaned: true });
    const before = await h.deliveries();
    const first = await send(body, await codehostHeaders(body, { 'x-github-delivery': delivery }));
    expect(first.status).toBe(202);
    const again = await send(body, await codehostHeaders(body, { 'x-github-delivery': delivery }));
    expect((await again.json()).id).toBe((await first.json()).id);
    expect(await h.deliveries()).toBe(before + 1);
    const events = [];
    for await (const e of h.runtime.store.readStream(reservationStream('codehost', delivery)))
      events.push(e.type);
    expect(events).toEqual(['DeliveryReserved', 'ReservationTakenOver']);
  });

  it('answers 503 while the database refuses connections, never 2xx, and serves again once it is back', async () => {
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
    await admin.connect();
    const body = JSON.stringify({ during: 'outage' });
    try {
      await admin.query(`alter database "${db.name}" allow_connections false`);
      await admin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
        [db.name],
      );
      // The provider cache may still hold codehost; either way nothing may be acknowledged.
      for (let i = 0; i < 3; i++) {
        const res = await send(body, await codehostHeaders(body, { 'x-github-delivery': randomUUID() }));
        expect(res.status).toBe(503);
        expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(await res.json()).toMatchObject({ status: 503 });
        const plain = await send(body, await codehostHeaders(body));
        expect(plain.status).toBe(503);
      }
    } finally {
      await admin.query(`alter database "${db.name}" allow_connections true`);
      await admin.end();
    }
    let res: Response | undefined;
    for (let i = 0; i < 50; i++) {
      res = await send(body, await codehostHeaders(body, { 'x-github-delivery': randomUUID() }));
      if (res.status === 202) break;
      expect(res.status).toBe(503);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(res!.status).toBe(202);
    const ack = (await res!.json()) as { id: number };
    await h.settle();
    expect(await deliveryDetail(h.runtime, ack.id)).toMatchObject({ id: ack.id, payload: body });
  });
});
