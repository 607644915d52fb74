import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../auth/server.ts';
import { operator } from '../http/api/client.ts';
import { createTestDatabase, postgresAvailable, type TestDatabase } from '../support/services.ts';
import { post } from './rules-support.ts';
import { connectAgent, settled, type TestServer } from './support.ts';

const PROXY_ENV = {
  HOOKLINE_TRUSTED_PROXIES: '127.0.0.1,::1',
  HOOKLINE_AUTH_USER_HEADER: 'X-Forwarded-User',
  HOOKLINE_SECRET_KEY: randomBytes(32).toString('base64url'),
};

type Vended = {
  id: string;
  slug: string;
  mcp_url: string;
  token: string;
  webhook: { webhook_id: string; ingest_url: string };
};
type Hold = {
  todo_id: string;
  event_id: number;
  disposition: string;
  reason: string | null;
  message: string | null;
  rule: { id: string; index: number } | null;
  released: null | { queue: string; todo_id: string };
};

const hasPg = await postgresAvailable();

// In embedded mode, and on PostgreSQL when it runs: the dispositions, the quarantine read model and the
// log's disposition column are plain SQL either way, but the release path is checked on both.
for (const storage of ['embedded', 'postgres'] as const) {
  describe.runIf(storage === 'embedded' || hasPg)(
    `quarantine for the operator: GET /api/v1/quarantine and release (${storage})`,
    () => {
      let server: TestServer;
      let database: TestDatabase | undefined;
      beforeAll(async () => {
        if (storage === 'postgres') database = await createTestDatabase();
        server = await startServer({ env: PROXY_ENV, ...(database ? { databaseUrl: database.url } : {}) });
      }, 120_000);
      afterAll(async () => {
        await server?.close();
        await database?.drop();
      });

      it('lists held deliveries with their fault reason, releases one to a queue once, and hides them from others', async () => {
        const alice = await operator(server.url, 'alice-q');
        const bob = await operator(server.url, 'bob-q');
        const vended = await alice.call<Vended>('POST', '/endpoints', {
          name: 'quarantine-agent',
          queue: 'work',
        });
        expect(vended.status).toBe(201);
        const ep = vended.body;
        const agent = await connectAgent({ url: ep.mcp_url, token: ep.token });
        try {
          await agent.ok('set_webhook_rules', {
            webhook_id: ep.webhook.webhook_id,
            rules: [
              {
                id: 'strict',
                source: "(d) => { if (d.payload?.bad) throw new Error('bad payload'); return 'continue'; }",
              },
              { id: 'hold', source: "(d) => d.payload?.hold ? { quarantine: true } : { route: 'work' }" },
            ],
          });
          const faulted = (await (await post(ep.webhook.ingest_url, { bad: true })).json()) as { id: number };
          const held = (await (await post(ep.webhook.ingest_url, { hold: true })).json()) as { id: number };
          await settled(server);

          const list = await alice.call<{ held: Hold[] }>('GET', '/quarantine');
          expect(list.status).toBe(200);
          const f = list.body.held.find((h) => h.event_id === faulted.id)!;
          const h = list.body.held.find((x) => x.event_id === held.id)!;
          expect(f).toMatchObject({
            disposition: 'faulted',
            reason: 'threw',
            rule: { id: 'strict', index: 0 },
            released: null,
          });
          expect(f.message).toContain('bad payload');
          expect(h).toMatchObject({ disposition: 'held', rule: { id: 'hold', index: 1 } });

          // Another operator sees none of it and cannot release it.
          expect((await bob.call<{ held: Hold[] }>('GET', '/quarantine')).body.held).toEqual([]);
          expect((await bob.call('POST', `/quarantine/${f.todo_id}/release`, { queue: 'work' })).status).toBe(
            404,
          );
          // Never back into quarantine, never to a queue outside the endpoint's scope.
          expect(
            (await alice.call('POST', `/quarantine/${f.todo_id}/release`, { queue: 'quarantine' })).status,
          ).toBe(400);
          expect(
            (await alice.call('POST', `/quarantine/${f.todo_id}/release`, { queue: 'other' })).status,
          ).toBe(400);

          // The agent cannot see the held todo; after release it can claim the new one.
          expect(await agent.refused('claim', { todo_id: f.todo_id })).toBe('not_found');
          const released = await alice.call<{ todo_id: string; queue: string }>(
            'POST',
            `/quarantine/${f.todo_id}/release`,
            { queue: 'work' },
          );
          expect(released.status).toBe(201);
          expect(released.body.queue).toBe('work');
          // Releasing again to the same queue answers the same todo; to another queue is a conflict.
          const again = await alice.call<{ todo_id: string }>('POST', `/quarantine/${f.todo_id}/release`, {
            queue: 'work',
          });
          expect(again.body.todo_id).toBe(released.body.todo_id);
          await settled(server);
          const claimed = await agent.ok<{ todo: { todo_id?: string; id?: string } }>('claim', {
            todo_id: released.body.todo_id,
          });
          expect(JSON.stringify(claimed)).toContain(released.body.todo_id);

          const after = await alice.call<{ held: Hold[] }>('GET', '/quarantine');
          expect(after.body.held.map((x) => x.todo_id)).not.toContain(f.todo_id);
          const all = await alice.call<{ held: Hold[] }>('GET', '/quarantine?state=released');
          expect(all.body.held.find((x) => x.todo_id === f.todo_id)?.released).toMatchObject({
            queue: 'work',
            todo_id: released.body.todo_id,
          });
        } finally {
          await agent.close();
        }
      }, 180_000);
    },
  );
}
