import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import { holdTable } from '../../support/table-lock.ts';
import { sendCodehost, startTestServer, type TestServer } from './support.ts';

const hasPg = await postgresAvailable();

/** Settles whether `promise` is still pending after `ms` (the log read model held back meanwhile). */
const pendingAfter = async (promise: Promise<unknown>, ms: number): Promise<boolean> => {
  const marker = Symbol('pending');
  const first = await Promise.race([promise, new Promise((r) => setTimeout(() => r(marker), ms))]);
  return first === marker;
};

describe.runIf(hasPg)('GET /log/{id} reads its own write (issue 15)', () => {
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

  it('waits for the log read model to pass a delivery acknowledged a moment ago', async () => {
    const lock = await holdTable(db.url, 'log_events');
    try {
      const ack = await sendCodehost(s.url, { fresh: true }, { event: 'push' });
      const detail = fetch(`${s.url}/log/${ack.id}`);
      // Not a 404 while the read model is behind: the request waits for it.
      expect(await pendingAfter(detail, 300)).toBe(true);
      await lock.release();
      const res = await detail;
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('{&quot;fresh&quot;:true}');
    } finally {
      await lock.release();
    }
  });

  it('answers 404 at once for an id the log does not hold', async () => {
    const lock = await holdTable(db.url, 'log_events');
    try {
      // Answered while the read model is held back: nothing to wait for.
      const res = await fetch(`${s.url}/log/999999`);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ code: 'not_found', detail: 'no event with id 999999' });
    } finally {
      await lock.release();
    }
  });

  it('answers 503, not 404, when the read model stays behind past the bound', async () => {
    const lock = await holdTable(db.url, 'log_events');
    try {
      const ack = await sendCodehost(s.url, { late: true }, { event: 'push' });
      const res = await fetch(`${s.url}/log/${ack.id}`, { headers: { accept: 'application/json' } });
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({ code: 'unavailable', projections: ['log'] });
    } finally {
      await lock.release();
    }
    const later = await fetch(`${s.url}/log/${(await sendCodehost(s.url, { after: 1 })).id}`);
    expect(later.status).toBe(200);
  });
});
