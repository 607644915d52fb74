import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { newId } from '../../src/ids.ts';
import { createDeliveryRecorder } from '../../src/ingest/recorder.ts';
import { createLogger } from '../../src/logger.ts';
import { operator } from '../http/api/client.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';
import { connectAgent, settled, startServer, type TestServer } from './support.ts';

/**
 * Issue 24, point 3: once a delivery is durable, its answer waits for what follows (the todo, the
 * doorbell, the disposition) only up to a bound (src/follow-up.ts), and a wait past the bound is
 * logged with what was awaited. Here another PostgreSQL session holds the advisory lock that every
 * writer of one stream takes (es_append_batch), as a long transaction elsewhere would.
 *
 * Since issue 23 a new delivery's hand-off is written in the delivery's own transaction: a held
 * stream of the hand-off holds the delivery too, and nothing is acknowledged or written until it
 * is released. What still follows a durable delivery is a retry finishing one whose todo was never
 * written: that sender is answered while the lock is held, and the step finishes after.
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

/**
 * The tests below on a server of `mode`: PostgreSQL (a database of DATABASE_URL) or embedded (a
 * database of its own on the worker's managed server). The holder connects to the server's own
 * database as another client would.
 */
function slowFollowUp(mode: string, createDatabase: () => Promise<TestDatabase | undefined>) {
  describe(`a slow step after a durable delivery does not hold the answer (${mode})`, () => {
    let database: TestDatabase | undefined;
    let server: TestServer;
    let holder: pg.Client;
    const lines: Line[] = [];

    beforeAll(async () => {
      database = await createDatabase();
      const logger = createLogger(
        { logLevel: 'info' },
        { write: (line: string) => void lines.push(JSON.parse(line) as Line) },
      );
      server = await startServer({
        ...(database ? { databaseUrl: database.url } : {}),
        env: PROXY_ENV,
        logger,
      });
      holder = new pg.Client({ connectionString: server.runtime.sql.url });
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

    const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });

    /** The first attempt of a delivery as the receiver recorded it before its hand-off was atomic, cut off before its todo. */
    async function interrupted(ep: Vended, deliveryId: string) {
      const todoId = newId('td');
      const recorded = await createDeliveryRecorder({
        store: server.runtime.store,
        clock: systemClock,
      }).record({
        payload: new TextEncoder().encode(JSON.stringify({ type: 'deploy' })),
        provider: `webhook:${ep.webhook.webhook_id}`,
        family: 'webhook',
        trust_mode: 'token',
        verified: false,
        verify_detail: 'token ok',
        event_type: 'deploy',
        external_id: deliveryId,
        content_type: 'application/json',
        source_ip: '127.0.0.1',
        headers: {},
        route: {
          endpoint_id: ep.id,
          slug: ep.slug,
          queue: 'inbox',
          todo_id: todoId,
          kind: 'webhook',
          webhook_id: ep.webhook.webhook_id,
        },
      });
      return { todoId, eventId: recorded.ack.id };
    }

    it('endpoint webhook, a retry finishing an interrupted delivery: 202 while its todo stream is held; the warning names the hand-off; the ring follows the release', async () => {
      const { ep } = await vend('held doorbell');
      const agent = await connectAgent({ url: ep.mcp_url, token: ep.token });
      try {
        await agent.client.subscribeResource({ uri: QUEUE });
        const deliveryId = `msg_${newId('td')}`;
        const first = await interrupted(ep, deliveryId);
        // The original's todo stream: only the step that finishes the original writes it.
        const { status, ack } = await whileHeld(`todo-${first.todoId}`, async () => {
          const res = await post(ep.webhook.ingest_url, { type: 'deploy' }, { 'webhook-id': deliveryId });
          const answer = { status: res.status, ack: (await res.json()) as { id: number } };
          expect(agent.rung).toEqual([]); // answered before the ring could be written
          return answer;
        });
        expect(status).toBe(202);
        expect(ack.id).toBe(first.eventId);
        const warned = linesOf(ack.id).find((l) => l.level === 40);
        expect(warned?.awaited).toMatch(
          new RegExp(`^the todo ${first.todoId} of event ${ack.id}, its doorbell`),
        );
        await agent.waitForRing(QUEUE, 1);
        expect(
          await eventually(() =>
            linesOf(ack.id).some((l) => l.msg === 'late follow-up of a delivery finished'),
          ),
        ).toBe(true);
        // Nothing lost: the original's todo is there to claim.
        await settled(server);
        const claimed = await agent.ok<{ todo: { id: string } | null }>('claim_next');
        expect(claimed.todo?.id).toBe(first.todoId);
      } finally {
        await agent.close();
      }
    });

    /** Whether the `deliveries` stream has grown past `revision`. */
    const deliveriesPast = async (revision: bigint) =>
      (await server.runtime.store.streamInfo('deliveries')).revision > revision;

    it('operator push: the delivery, its todo and its ring are one append; a held doorbell stream holds the answer and writes nothing until it is released', async () => {
      const { alice, ep } = await vend('held push');
      const before = (await server.runtime.store.streamInfo('deliveries')).revision;
      let answered = false;
      const { pending } = await whileHeld(`doorbell-${ep.id}`, async () => {
        const pending = alice
          .call<{ id: string; event_id: number; created: boolean }>('POST', `/endpoints/${ep.slug}/todos`, {
            title: 'Look at this',
          })
          .finally(() => {
            answered = true;
          });
        await new Promise((r) => setTimeout(r, 300));
        // Nothing acknowledged, nothing of the hand-off written: not even the delivery.
        expect(answered).toBe(false);
        expect(await deliveriesPast(before)).toBe(false);
        return { pending };
      });
      const pushed = await pending;
      expect(pushed.status, pushed.text).toBe(201);
      expect(pushed.body.created).toBe(true);
      expect((await server.runtime.store.streamInfo(`todo-${pushed.body.id}`)).revision).toBe(0n);
      expect(linesOf(pushed.body.event_id).filter((l) => l.level >= 40)).toEqual([]);
    });

    it('webhook with a rule: a held dispositions stream holds the delivery, its todo and its ring alike; 202 once written together', async () => {
      const { ep } = await vend('held disposition');
      const agent = await connectAgent({ url: ep.mcp_url, token: ep.token });
      try {
        await agent.ok('add_webhook_rule', {
          webhook_id: ep.webhook.webhook_id,
          id: 'inbox',
          source: "() => ({ route: 'inbox' })",
        });
        await agent.client.subscribeResource({ uri: QUEUE });
        const before = (await server.runtime.store.streamInfo('deliveries')).revision;
        const { pending } = await whileHeld(`dispositions-${ep.webhook.webhook_id}`, async () => {
          const pending = post(ep.webhook.ingest_url, { type: 'deploy' });
          await new Promise((r) => setTimeout(r, 300));
          expect(agent.rung).toEqual([]);
          expect(await deliveriesPast(before)).toBe(false);
          return { pending };
        });
        const res = await pending;
        expect(res.status).toBe(202);
        await agent.waitForRing(QUEUE, 1);
        await settled(server);
        const claimed = await agent.ok<{ todo: { id: string } | null }>('claim_next');
        expect(claimed.todo).not.toBeNull();
      } finally {
        await agent.close();
      }
    });
  });
}

slowFollowUp('embedded', async () => undefined);

const hasPg = await postgresAvailable();

describe.runIf(hasPg)('on PostgreSQL', () => {
  slowFollowUp('PostgreSQL', () => createTestDatabase('hookline_follow_up'));
});
