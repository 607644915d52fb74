import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type CallToolResult, ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

/**
 * An agent of the benchmarks (bench:agent, bench:drain): the MCP SDK's client over Streamable HTTP
 * with an endpoint's bearer. `onRing` hears each `notifications/resources/updated` (the doorbell),
 * with the resource's URI. `call` runs a tool and answers its structured content; an `isError`
 * result throws.
 *
 * The SDK's client gives every POST the transport's one AbortSignal, and fetch adds a listener to
 * it per request that goes only when the request is collected: each call's listener was added past
 * all the earlier ones (6% of bench:agent's samples, 2.7% of bench:drain's, on the cores the server
 * uses too). The calls go without it; the notification stream (GET) keeps it, so close() still
 * ends it.
 */
export async function connectAgent(url: string, token: string, onRing?: (uri: string) => void) {
  const client = new Client({ name: 'bench-agent', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: (input, init) => fetch(input, init?.method === 'POST' ? { ...init, signal: null } : init),
  });
  if (onRing) client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => onRing(n.params.uri));
  await client.connect(transport);
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.structuredContent)}`);
    return r.structuredContent as Record<string, unknown>;
  };
  return { client, call };
}
