import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

/**
 * The MCP SDK (1.32.2, the v1 line) leaks one entry per POST on a session whose transport answers
 * in JSON (`enableJsonResponse`): its `send` resolves the POST's response but never runs that
 * stream's `cleanup`, so the entry, and with it the request's `authInfo` (claim_next's read-ahead
 * page, the endpoint's facts), stays in the transport's `_streamMapping` until the session closes.
 * An agent that stays connected grew the server by 30 to 40 KB of RSS a claimed todo (bench:agent: a
 * peak of 0.8 to 1 GB after 15,000 todos). Upstream: modelcontextprotocol/typescript-sdk#2559
 * (fixed on its main branch, not on v1).
 *
 * `releaseAnsweredStreams` runs after each POST the transport has answered, and does what that
 * cleanup would have done: it drops the JSON-mode entries that no request in flight points to.
 * (While a POST waits for its answers, its request ids map to its entry; the SDK removes them
 * once every answer is in, in the same turn as it resolves the response.) It reads the SDK's
 * private fields, and does nothing when they are not there; test/mcp/answered-streams.e2e.test.ts
 * fails if the entries grow again with a newer SDK. Remove it once the SDK releases the fix.
 */
interface StreamMappingInternals {
  readonly _streamMapping?: Map<string, { readonly resolveJson?: unknown; readonly cleanup: () => void }>;
  readonly _requestToStreamMapping?: Map<unknown, string>;
}

/** The web-standard transport the Node transport wraps (where the maps live). */
export function streamMappingOf(
  transport: StreamableHTTPServerTransport,
): StreamMappingInternals['_streamMapping'] {
  return internals(transport)?._streamMapping;
}

function internals(transport: StreamableHTTPServerTransport): StreamMappingInternals | undefined {
  return (transport as unknown as { _webStandardTransport?: StreamMappingInternals })._webStandardTransport;
}

export function releaseAnsweredStreams(transport: StreamableHTTPServerTransport): void {
  const inner = internals(transport);
  const streams = inner?._streamMapping;
  const requests = inner?._requestToStreamMapping;
  if (!(streams instanceof Map) || !(requests instanceof Map) || streams.size === 0) return;
  let waiting: Set<string> | undefined;
  for (const [streamId, stream] of streams) {
    if (stream.resolveJson === undefined) continue; // an SSE stream: the SDK ends those itself
    waiting ??= new Set(requests.values());
    if (!waiting.has(streamId)) stream.cleanup();
  }
}
