import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

/** One MCP session of this process (design.md: a session lives in the instance that opened it). */
export interface McpSession {
  readonly id: string;
  readonly endpointId: string;
  readonly transport: StreamableHTTPServerTransport;
  readonly server: Server;
  /** Resource URIs the client subscribed to (the doorbell rings only these). */
  readonly subscriptions: Set<string>;
  /** Last request (ms since epoch) and the GET streams open now: what the idle reaper looks at. */
  lastSeen: number;
  openStreams: number;
  /**
   * A tool call of this session that may have written ended since its last read: the next read
   * waits for the read models to pass what the log held then (src/mcp/server.ts).
   */
  wrote?: boolean;
}

export interface SessionRegistry {
  add(session: McpSession): void;
  get(id: string): McpSession | undefined;
  remove(id: string): void;
  forEndpoint(endpointId: string): Iterable<McpSession>;
  size(): number;
  /**
   * Closes sessions with no open notification stream and no request for `idleMs`: a client that
   * went away without DELETE leaves nothing behind. Returns how many were closed.
   */
  reapIdle(now: number, idleMs: number): Promise<number>;
  /** Closes every session (shutdown): their streams end, clients see the session gone. */
  closeAll(): Promise<void>;
}

export function createSessionRegistry(): SessionRegistry {
  const byId = new Map<string, McpSession>();
  const byEndpoint = new Map<string, Set<McpSession>>();
  return {
    add(session) {
      byId.set(session.id, session);
      let set = byEndpoint.get(session.endpointId);
      if (!set) {
        set = new Set();
        byEndpoint.set(session.endpointId, set);
      }
      set.add(session);
    },
    get: (id) => byId.get(id),
    remove(id) {
      const session = byId.get(id);
      if (!session) return;
      byId.delete(id);
      const set = byEndpoint.get(session.endpointId);
      set?.delete(session);
      if (set?.size === 0) byEndpoint.delete(session.endpointId);
    },
    forEndpoint: (endpointId) => byEndpoint.get(endpointId) ?? [],
    size: () => byId.size,
    async reapIdle(now, idleMs) {
      const idle = [...byId.values()].filter((s) => s.openStreams === 0 && now - s.lastSeen > idleMs);
      for (const s of idle) this.remove(s.id);
      await Promise.allSettled(idle.map((s) => s.server.close()));
      return idle.length;
    },
    async closeAll() {
      const all = [...byId.values()];
      byId.clear();
      byEndpoint.clear();
      await Promise.allSettled(all.map((s) => s.server.close()));
    },
  };
}
