import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { createSessionRegistry, type McpSession } from '../../src/mcp/sessions.ts';

const session = (id: string, endpointId: string, lastSeen: number, openStreams = 0): McpSession => ({
  id,
  endpointId,
  transport: new StreamableHTTPServerTransport({ sessionIdGenerator: () => id }),
  server: new Server({ name: 't', version: '1' }, { capabilities: {} }),
  subscriptions: new Set(),
  lastSeen,
  openStreams,
});

describe('session registry', () => {
  it('indexes sessions by endpoint and reaps only idle ones without an open stream', async () => {
    const registry = createSessionRegistry();
    registry.add(session('a', 'ep_1', 0));
    registry.add(session('b', 'ep_1', 0, 1));
    registry.add(session('c', 'ep_2', 900));
    expect([...registry.forEndpoint('ep_1')].map((s) => s.id).sort()).toEqual(['a', 'b']);
    expect(await registry.reapIdle(1000, 500)).toBe(1);
    expect(registry.get('a')).toBeUndefined();
    expect(registry.get('b')).toBeDefined();
    expect(registry.get('c')).toBeDefined();
    registry.remove('b');
    expect([...registry.forEndpoint('ep_1')]).toEqual([]);
    await registry.closeAll();
    expect(registry.size()).toBe(0);
  });
});
