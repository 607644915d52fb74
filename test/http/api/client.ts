import { parseData, parseMetadata } from '../../../src/eventstore/codec.ts';
import { type EventStore, StreamNotFoundError } from '../../../src/eventstore/port.ts';
import { signIn } from '../../auth/server.ts';

export interface ApiResponse<T = unknown> {
  readonly status: number;
  readonly contentType: string | null;
  readonly body: T;
  readonly text: string;
}

/** An operator signed in through the real flow (as `user`, named by the trusted proxy). */
export async function operator(baseUrl: string, user: string) {
  const tokens = await signIn(baseUrl, { 'x-forwarded-user': user });
  const call = async <T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse<T>> => {
    const res = await fetch(`${baseUrl}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, contentType: res.headers.get('content-type'), body: parsed as T, text };
  };
  return { user, tokens, call };
}

export async function readStream(store: EventStore, streamId: string) {
  const out: { type: string; data: unknown; metadata: unknown; raw: Uint8Array; revision: bigint }[] = [];
  try {
    for await (const e of store.readStream(streamId)) {
      const data = e.contentType === 'application/json' ? parseData(e) : null;
      out.push({ type: e.type, data, metadata: parseMetadata(e), raw: e.data, revision: e.revision });
    }
  } catch (err) {
    if (!(err instanceof StreamNotFoundError)) throw err;
  }
  return out;
}

/** The `deliveries` event with the spec's event id (revision + 1). */
export async function delivery(store: EventStore, eventId: number) {
  for await (const e of store.readStream('deliveries', { fromRevision: BigInt(eventId - 1), maxCount: 1 })) {
    return { metadata: parseMetadata<Record<string, unknown>>(e), body: new TextDecoder().decode(e.data) };
  }
  return undefined;
}

/**
 * Waits until every read model has applied the whole log. The API already waits (bounded) after
 * each write; on a PostgreSQL cluster shared with other work a long transaction elsewhere can
 * hold the xid8 readers back longer, and these tests check the read models, not their latency.
 */
export async function settled(server: {
  runtime: {
    store: EventStore;
    projections: { waitFor: (p: string, o?: { timeoutMs?: number }) => Promise<void> };
  };
}) {
  const head = await server.runtime.store.committedPosition();
  await server.runtime.projections.waitFor(head, { timeoutMs: 60_000 });
}
