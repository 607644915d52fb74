import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { operator } from '../http/api/client.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';
import { connectAgent, settled, startServer, type TestServer } from './support.ts';

/**
 * Issue 24, point 3: once a delivery is durable, its answer waits for what follows (the todo, the
 * doorbell, the disposition) only up to a bound (src/follow-up.ts), and a wait past the bound is
 * logged with what was awaited. Here another PostgreSQL session holds the advisory lock that every
 * writer of one stream takes (es_append_batch v4), as a long transaction elsewhere would: the
 * delivery is written, the step on that stream waits. The sender must be answered while the lock
 * is still held; once it is released, the step finishes and says so.
 */
const STREAM_LOCK_CLASS = 0x686b6c73; // 'hkls', migrations/20261124000100_event_store_lock_first.ts
const QUEUE = 'hookline://queues/inbox';
const PROXY_ENV = {
  HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1',
  HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User',
};

type Line = { level: number; msg: string; awaited?: string; event_id?: number; [k: string]: unknown };
type Vended = {
  id: string;
  slug: string;
  mcp_url: string;
  token: string;
  webhook: { webhook_id: string; ingest_url: string };
};

const hasPg = await postgresAvailable();

describe.runIf(hasPg)('a slow step after a durable delivery does not hold the answer (PostgreSQL)', () => {
  let database: TestDatabase;
  let server: TestServer;
  let holder: pg.Client;
  const lines: Line[] = [];

  beforeAll(async () => {
    database = await createTestDatabase('hookline_follow_up');
    const logger = createLogger(
      { logLevel: 'info' },
      { write: (line: string) => void lines.push(JSON.parse(line) as Line) },
    );
    server = await startServer({ databaseUrl: database.url, env: PROXY_ENV, logger });
    holder = new pg.Client({ connectionString: database.url });
    await holder.connect();
  });
  afterAll(async () => {
    await holder?.end();
    await server?.close();
    await database?.drop();
  });

  /** Runs `during` while another session holds `stream`'s writer lock, and releases it after. */
  async function whileHeld<T>(stream: string, during: () => Promise<T>): Promise<T> {
    const key = [STREAM_LOCK_CLASS, stream];
    await holder.query('select pg_advisory_lock($1, hashtext($2) & 2147483647)', key);
    try {
      return await during();
    } finally {
      await holder.query('select pg_advisory_unlock($1, hashtext($2) & 2147483647)', key);
    }
  }

  const linesOf = (eventId: number) => lines.filter((l) => l.event_id === eventId);
  const eventually = async (probe: () => boolean) => {
    for (let i = 0; i < 200 && !probe(); i++) await new Promise((r) => setTimeout(r, 50));
    return probe();
  };

  async function vend(name: string) {
    const alice = await operator(server.url, 'alice');
    const v = await alice.call<Vended>('POST', '/endpoints', { name });
    expect(v.status, v.text).toBe(201);
    return { alice, ep: v.body };
  }

  const post = (url: string, body: unknown) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('endpoint webhook: 202 while the doorbell stream is held; the warning names the doorbell; the ring follows the release', async () => {
    const { ep } = await vend('held doorbell');
    const agent = await connectAgent({ url: ep.mcp_url, token: ep.token });
    try {
      await agent.client.subscribeResource({ uri: QUEUE });
      const { status, ack } = await whileHeld(`doorbell-${ep.id}`, async () => {
        const res = await post(ep.webhook.ingest_url, { type: 'deploy' });
        const answer = { status: res.status, ack: (await res.json()) as { id: number } };
        expect(agent.rung).toEqual([]); // answered before the ring could be written
        return answer;
      });
      expect(status).toBe(202);
      const warned = linesOf(ack.id).find((l) => l.level === 40);
      expect(warned?.awaited).toMatch(new RegExp(`^the doorbell of endpoint ${ep.id}`));
      expect(warned?.msg).toContain('the doorbell');
      await agent.waitForRing(QUEUE, 1);
      expect(
        await eventually(() =>
          linesOf(ack.id).some((l) => l.msg === 'late follow-up of a delivery finished'),
        ),
      ).toBe(true);
      // Nothing lost: the todo is there to claim.
      await settled(server);
      const claimed = await agent.ok<{ todo: { id: string } | null }>('claim_next');
      expect(claimed.todo).not.toBeNull();
    } finally {
      await agent.close();
    }
  });

  it('operator push: 201 while the doorbell stream is held; the warning names the doorbell', async () => {
    const { alice, ep } = await vend('held push');
    const pushed = await whileHeld(`doorbell-${ep.id}`, () =>
      alice.call<{ id: string; event_id: number; created: boolean }>('POST', `/endpoints/${ep.slug}/todos`, {
        title: 'Look at this',
      }),
    );
    expect(pushed.status, pushed.text).toBe(201);
    expect(pushed.body.created).toBe(true);
    const warned = linesOf(pushed.body.event_id).find((l) => l.level === 40);
    expect(warned?.awaited).toMatch(new RegExp(`^the doorbell of endpoint ${ep.id}`));
    expect(
      await eventually(() =>
        linesOf(pushed.body.event_id).some((l) => l.msg === 'late follow-up of a delivery finished'),
      ),
    ).toBe(true);
  });

  it('webhook with a rule: the todo and the ring are written, the disposition waits; 202 all the same', async () => {
    const { ep } = await vend('held disposition');
    const agent = await connectAgent({ url: ep.mcp_url, token: ep.token });
    try {
      await agent.ok('add_webhook_rule', {
        webhook_id: ep.webhook.webhook_id,
        id: 'inbox',
        source: "() => ({ route: 'inbox' })",
      });
      await agent.client.subscribeResource({ uri: QUEUE });
      const { status, ack } = await whileHeld(`dispositions-${ep.webhook.webhook_id}`, async () => {
        const res = await post(ep.webhook.ingest_url, { type: 'deploy' });
        const answer = { status: res.status, ack: (await res.json()) as { id: number } };
        // Still held: the todo was minted and the doorbell rang; only the disposition waits.
        await agent.waitForRing(QUEUE, 1);
        return answer;
      });
      expect(status).toBe(202);
      const warned = linesOf(ack.id).find((l) => l.level === 40);
      expect(warned?.awaited).toMatch(new RegExp(`^the disposition of event ${ack.id} \\(todo td_`));
      expect(
        await eventually(() =>
          linesOf(ack.id).some((l) => l.msg === 'late follow-up of a delivery finished'),
        ),
      ).toBe(true);
    } finally {
      await agent.close();
    }
  });
});
