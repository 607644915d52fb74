import type { EndpointFacts } from '../domain/endpoint/state.ts';
import type { Drain, FirstPage } from '../todos/drain.ts';
import { queuesFor } from './tools/scope.ts';

/**
 * What a tool call can read before its tool runs, in the statement that also checks the bearer
 * (src/http/mcp.ts, `readAhead`): claim_next's first page of candidates. An agent's loop is
 * claim_next then complete, so half its calls are claim_next, and each saves a statement.
 */

/** The queues a POST body's claim_next call takes from; undefined for any other body, or one the tool will refuse. */
function claimNextQueues(endpoint: EndpointFacts, body: unknown): string[] | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { method, params } = body as { method?: unknown; params?: unknown };
  if (method !== 'tools/call' || typeof params !== 'object' || params === null) return undefined;
  const { name, arguments: args } = params as { name?: unknown; arguments?: unknown };
  if (name !== 'claim_next' || !endpoint.verbs.includes('claim_next')) return undefined;
  const queue = typeof args === 'object' && args !== null ? (args as { queue?: unknown }).queue : undefined;
  if (queue !== undefined && typeof queue !== 'string') return undefined;
  try {
    return queuesFor(endpoint, queue);
  } catch {
    return undefined; // outside the endpoint's scope: the tool refuses it
  }
}

/** A POST's read-ahead (src/http/mcp.ts, `readAhead`): claim_next's first page, with the endpoint stream's revision. */
export function createReadAhead(drain: Pick<Drain, 'firstCandidates'>) {
  return async (
    endpoint: EndpointFacts,
    body: unknown,
    streamId: string,
  ): Promise<{ readonly revision: bigint; readonly value: FirstPage } | undefined> => {
    const queues = claimNextQueues(endpoint, body);
    if (!queues) return undefined;
    const { revision, page } = await drain.firstCandidates(endpoint.id, queues, streamId);
    return { revision, value: page };
  };
}

/** The first page read ahead for this call, if one was (authInfo.extra.readAhead). */
export function firstPageOf(extra: Record<string, unknown> | undefined): FirstPage | undefined {
  const value = extra?.readAhead as FirstPage | undefined;
  return value && Array.isArray(value.candidates) ? value : undefined;
}
