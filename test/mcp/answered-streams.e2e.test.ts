import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamMappingOf } from '../../src/mcp/answered-streams.ts';
import type { SessionRegistry } from '../../src/mcp/sessions.ts';
import { connectAgent, push, settled, startServer, type TestServer, vend } from './support.ts';

/**
 * A session's transport answers tool calls as JSON, and the MCP SDK (v1) keeps an entry per
 * answered POST until the session closes (src/mcp/answered-streams.ts). An agent that stays
 * connected must not grow the server with every call: after its calls are answered, the session
 * keeps no JSON answer's entry. (Without the release each call below leaves one: 40 and more.)
 */
describe('MCP: an answered tool call leaves nothing in its session', () => {
  let server: TestServer;
  let sessions: SessionRegistry | undefined;
  beforeAll(async () => {
    server = await startServer({
      app: {
        onMcpSessions: (s) => {
          sessions = s;
        },
      },
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  const answeredEntries = (endpointId: string): number[] =>
    [...(sessions?.forEndpoint(endpointId) ?? [])].map((session) => {
      const mapping = streamMappingOf(session.transport);
      // The SDK moved its fields: answered-streams.ts releases nothing any more; look again.
      if (!(mapping instanceof Map)) throw new Error('the MCP SDK transport has no _streamMapping');
      return [...mapping.values()].filter((s) => s.resolveJson !== undefined).length;
    });

  it('claims, completes and lists 20 todos with one session: no JSON stream entry stays behind', async () => {
    const ep = await vend(server);
    for (let i = 0; i < 20; i++) await push(server, ep, { title: `todo ${i}` });
    await settled(server);
    const agent = await connectAgent(ep);
    try {
      let done = 0;
      for (;;) {
        const claimed = await agent.ok<{ todo: { id: string } | null; lease_id: string | null }>(
          'claim_next',
        );
        if (!claimed.todo) break;
        await agent.ok('complete', {
          todo_id: claimed.todo.id,
          lease_id: claimed.lease_id,
          result: { ok: true },
        });
        await agent.ok('list_todos');
        done++;
      }
      expect(done).toBe(20);
      expect(answeredEntries(ep.id)).toEqual([0]);

      // Calls in flight together on the one session: each keeps its entry only until answered.
      await Promise.all(Array.from({ length: 8 }, () => agent.ok('list_todos')));
      expect(answeredEntries(ep.id)).toEqual([0]);
    } finally {
      await agent.close();
    }
  });
});
