import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  pendingCandidates,
  pendingCandidatesWithRevision,
  queueCounts,
} from '../../projections/todos.queries.ts';
import { endpointStream } from '../../src/domain/endpoint/events.ts';
import { revokeEndpoint } from '../../src/endpoints/revoke.ts';
import { connectAgent, push, settled, startServer, type TestServer, vend } from './support.ts';

/**
 * claim_next's first candidates are read in the statement that checks the bearer's endpoint
 * (src/mcp/read-ahead.ts): the check is as fresh as one made alone, so a revoke committed before
 * the call stops it with a 401 and nothing is claimed.
 */
describe('MCP: claim_next reads its first candidates with the bearer check', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('reads the page pendingCandidates reads and the stream revision the store has', async () => {
    const ep = await vend(server);
    for (const title of ['one', 'two', 'three']) await push(server, ep, { title });
    await settled(server);
    const { db, store } = server.runtime;
    const filter = { endpointId: ep.id, queues: ['inbox'], limit: 2 };
    const read = await pendingCandidatesWithRevision(db, filter, endpointStream(ep.id));
    expect(read.candidates).toEqual(await pendingCandidates(db, { ...filter, after: undefined }));
    expect(read.candidates).toHaveLength(2);
    expect(read.revision).toBe((await store.streamInfo(endpointStream(ep.id))).revision);
    const none = await pendingCandidatesWithRevision(
      db,
      { ...filter, queues: ['elsewhere'] },
      'endpoint-nobody',
    );
    expect(none).toEqual({ revision: -1n, candidates: [] });
  });

  it('an open session claims from the page read with the check; after a revoke its claim_next is a 401 and claims nothing', async () => {
    const ep = await vend(server);
    await push(server, ep, { title: 'first' });
    await push(server, ep, { title: 'second' });
    await settled(server);
    const agent = await connectAgent(ep);
    // The session's requests so far kept the endpoint: this claim_next reads ahead.
    const claimed = await agent.ok<{ todo: { id: string } | null }>('claim_next');
    expect(claimed.todo).not.toBeNull();

    await revokeEndpoint(
      { store: server.runtime.store, clock: server.runtime.clock },
      { ref: ep.slug, operator: 'alice', human: 'alice' },
    );
    await expect(agent.call('claim_next')).rejects.toThrow(/401|nauthorized/);
    await settled(server);
    expect(await queueCounts(server.runtime.db, ep.id, 'inbox')).toMatchObject({ pending: 1, claimed: 1 });
    await agent.client.close().catch(() => {});
  });
});
