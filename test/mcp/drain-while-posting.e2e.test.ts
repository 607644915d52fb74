import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operator } from '../http/api/client.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';
import { connectAgent, settled, startServer, type TestServer } from './support.ts';

/**
 * Issue 24: an operator signs in and vends one endpoint, an agent (the MCP SDK's client with the
 * vended bearer) subscribes to its queue, then, again and again: the agent drains the queue
 * (claim_next, complete with its lease_id, until nothing is left), a sender POSTs a small JSON body
 * to the vended webhook's ingest URL, and the agent waits for the doorbell. Every POST must answer
 * 202, and within 5 s: that bound only catches a POST that stops answering (a provider gives up
 * after 10 to 30 s and retries); a healthy one answers in tens of milliseconds.
 */
const ITERATIONS = 300;
const POST_BOUND_MS = 5_000;
const RING_BOUND_MS = 15_000;
const QUEUE = 'hookline://queues/inbox';
const PROXY_ENV = {
  HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1',
  HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User',
};

type Vended = { id: string; mcp_url: string; token: string; webhook: { ingest_url: string } };
type Claimed = { todo: { id: string } | null; lease_id: string | null };

function drainWhilePosting(mode: string, server: () => TestServer) {
  it(`${mode}: ${ITERATIONS} rounds of drain, POST to the vended webhook, doorbell; every POST answers 202 within ${POST_BOUND_MS / 1000} s`, async () => {
    const alice = await operator(server().url, 'alice');
    const vend = await alice.call<Vended>('POST', '/endpoints', { name: 'bell' });
    expect(vend.status, vend.text).toBe(201);
    const ep = vend.body;
    const agent = await connectAgent({ url: ep.mcp_url, token: ep.token });
    try {
      await agent.client.subscribeResource({ uri: QUEUE });
      let completed = 0;
      let lastId = 0;
      for (let i = 0; i < ITERATIONS; i++) {
        for (;;) {
          const next = await agent.ok<Claimed>('claim_next');
          if (!next.todo) break;
          await agent.ok('complete', { todo_id: next.todo.id, lease_id: next.lease_id });
          completed++;
        }
        const rungBefore = agent.rung.length;
        const res = await fetch(ep.webhook.ingest_url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'bell.rung', round: i }),
          signal: AbortSignal.timeout(POST_BOUND_MS),
        }).catch((err: unknown) => {
          const rung = agent.rung.length > rungBefore ? 'the doorbell had rung' : 'no doorbell yet';
          throw new Error(`round ${i}: the POST got no answer within ${POST_BOUND_MS} ms (${rung})`, {
            cause: err,
          });
        });
        const text = await res.text();
        expect(res.status, `round ${i}: ${text}`).toBe(202);
        const ack = JSON.parse(text) as { id: number };
        expect(ack.id).toBeGreaterThan(lastId);
        lastId = ack.id;
        await agent.waitForRing(QUEUE, i + 1, RING_BOUND_MS);
      }
      // The last round's todo is still pending: every todo minted reached the agent once.
      await settled(server());
      for (;;) {
        const next = await agent.ok<Claimed>('claim_next');
        if (!next.todo) break;
        await agent.ok('complete', { todo_id: next.todo.id, lease_id: next.lease_id });
        completed++;
      }
      expect(completed).toBe(ITERATIONS);
    } finally {
      await agent.close();
    }
  }, 300_000);
}

describe('an endpoint webhook keeps answering while an agent drains (embedded)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ env: PROXY_ENV });
  });
  afterAll(async () => {
    await server?.close();
  });

  drainWhilePosting('embedded', () => server);
});

const hasPg = await postgresAvailable();

describe.runIf(hasPg)('an endpoint webhook keeps answering while an agent drains (PostgreSQL)', () => {
  let database: TestDatabase;
  let server: TestServer;
  beforeAll(async () => {
    database = await createTestDatabase('hookline_drain_post');
    server = await startServer({ databaseUrl: database.url, env: PROXY_ENV });
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
  });

  drainWhilePosting('PostgreSQL', () => server);
});
