import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../auth/server.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../../support/services.ts';
import { holdTable } from '../../support/table-lock.ts';
import { operator } from './client.ts';

/**
 * The operator API reads its caller's own writes (issue 15, point 2): a read model held back on
 * purpose (test/support/table-lock.ts) makes the read wait, bounded, never answer as if the write
 * had not happened. No `settled()` here: the reads run right after the writes they follow.
 */
const hasPg = await postgresAvailable();

const PROXY_ENV = {
  HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1',
  HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User',
};

/** Settles whether `promise` is still pending after `ms` (the read model held back meanwhile). */
const pendingAfter = async (promise: Promise<unknown>, ms: number): Promise<boolean> => {
  const marker = Symbol('pending');
  const first = await Promise.race([promise, new Promise((r) => setTimeout(() => r(marker), ms))]);
  return first === marker;
};

type Vended = { id: string; agent_id: string; slug: string; webhook: { ingest_url: string } };

describe.runIf(hasPg)('the operator API reads its own write (issue 15)', () => {
  let db: TestDatabase;
  let server: TestServer;
  let alice: Awaited<ReturnType<typeof operator>>;
  beforeAll(async () => {
    db = await createTestDatabase();
    server = await startServer({ databaseUrl: db.url, env: PROXY_ENV });
    alice = await operator(server.url, 'alice');
  });
  afterAll(async () => {
    await server?.close();
    await db?.drop();
  });

  /** A delivery to an endpoint webhook of alice's, acknowledged: its id (202). */
  const deliver = async (ingestUrl: string, body: unknown): Promise<number> => {
    const res = await fetch(ingestUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { id: number }).id;
  };

  it('GET /events/{id} waits for the log read model to pass a delivery acknowledged a moment ago', async () => {
    const vended = await alice.call<Vended>('POST', '/endpoints', { name: 'Lagged reader' });
    expect(vended.status, vended.text).toBe(201);
    const lock = await holdTable(db.url, 'log_events');
    try {
      const id = await deliver(vended.body.webhook.ingest_url, { fresh: true });
      const read = alice.call<{ id: number; payload: string }>('GET', `/events/${id}`);
      // Not a 404 while the read model is behind: the request waits for it.
      expect(await pendingAfter(read, 300)).toBe(true);
      await lock.release();
      const res = await read;
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ id, payload: '{"fresh":true}' });
    } finally {
      await lock.release();
    }
  });

  it('GET /events/{id} answers 404 at once for an id beyond the head of the log', async () => {
    const lock = await holdTable(db.url, 'log_events');
    try {
      const started = performance.now();
      const res = await alice.call<{ code: string }>('GET', '/events/999999');
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('not_found');
      // Nothing to wait for: well under the 2 s bound.
      expect(performance.now() - started).toBeLessThan(1500);
    } finally {
      await lock.release();
    }
  });

  it('GET /events/{id} answers 503, not 404, once the log read model stays behind past about 2 s', async () => {
    const vended = await alice.call<Vended>('POST', '/endpoints', { name: 'Late reader' });
    expect(vended.status, vended.text).toBe(201);
    const lock = await holdTable(db.url, 'log_events');
    try {
      const id = await deliver(vended.body.webhook.ingest_url, { late: true });
      const started = performance.now();
      const res = await alice.call<{ code: string; projections: string[] }>('GET', `/events/${id}`);
      const waited = performance.now() - started;
      expect(res.status, res.text).toBe(503);
      expect(res.body).toMatchObject({ code: 'unavailable', projections: ['log'] });
      // The bound is the "about 2 s" (READ_YOUR_WRITES_MS), not more.
      expect(waited).toBeGreaterThanOrEqual(1900);
      expect(waited).toBeLessThan(4500);
    } finally {
      await lock.release();
    }
  });

  it('a push answers once its todo is in the read model, and its delivery reads back at once after', async () => {
    const vended = await alice.call<Vended>('POST', '/endpoints', { name: 'Pushed to' });
    expect(vended.status, vended.text).toBe(201);
    const todos = await holdTable(db.url, 'todos');
    const log = await holdTable(db.url, 'log_events');
    try {
      const push = alice.call<{ id: string; event_id: number }>(
        'POST',
        `/endpoints/${vended.body.slug}/todos`,
        {
          title: 'Read me back',
          payload: { n: 1 },
        },
      );
      // The 201 waits for the todos read model.
      expect(await pendingAfter(push, 300)).toBe(true);
      await todos.release();
      const pushed = await push;
      expect(pushed.status, pushed.text).toBe(201);
      // Its delivery, right after the 201, while the log read model is still behind: waited for.
      const read = alice.call<{ id: number }>('GET', `/events/${pushed.body.event_id}`);
      expect(await pendingAfter(read, 300)).toBe(true);
      await log.release();
      const res = await read;
      expect(res.status, res.text).toBe(200);
      expect(res.body.id).toBe(pushed.body.event_id);
    } finally {
      await todos.release();
      await log.release();
    }
  });

  it('a vend answers once the read models have it: the next GET /endpoints and GET /agents list it', async () => {
    const endpoints = await holdTable(db.url, 'endpoints');
    const agents = await holdTable(db.url, 'agents');
    let vend: Promise<Awaited<ReturnType<typeof alice.call<Vended>>>> | undefined;
    try {
      vend = alice.call<Vended>('POST', '/endpoints', { name: 'Listed at once' });
      expect(await pendingAfter(vend, 300)).toBe(true);
    } finally {
      await endpoints.release();
      await agents.release();
    }
    const vended = await vend;
    expect(vended?.status, vended?.text).toBe(201);
    const list = await alice.call<{ id: string }[]>('GET', '/endpoints');
    expect(list.body.map((e) => e.id)).toContain(vended?.body.id);
    const listed = await alice.call<{ id: string }[]>('GET', '/agents');
    expect(listed.body.map((a) => a.id)).toContain(vended?.body.agent_id);
  });
});
