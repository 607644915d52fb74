import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectAgent, push, settled, startServer, type TestServer, vend } from './support.ts';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A ring of this process reaches its sessions twice over: from the store as the append commits
 * (`onAppended`), and from the shared `$all` subscription once it reads the event. The doorbell
 * tells each ring once (src/mcp/doorbell.ts); without that, each push below would ring twice.
 */
describe('MCP: each doorbell ring is told once', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('three pushes, one at a time: three notifications, none after $all has read them too', async () => {
    const ep = await vend(server);
    const agent = await connectAgent(ep);
    try {
      await agent.client.subscribeResource({ uri: 'hookline://queues/inbox' });
      for (let n = 1; n <= 3; n++) {
        await push(server, ep, { title: `todo ${n}` });
        await agent.waitForRing('hookline://queues/inbox', n);
        // Every read model has applied the ring: the shared $all reader has handed it on too.
        await settled(server);
        await pause(200);
        expect(agent.rung).toEqual(Array.from({ length: n }, () => 'hookline://queues/inbox'));
      }
    } finally {
      await agent.close();
    }
  });
});
