import { describe, expect, it } from 'vitest';
import { endpointStream } from '../../src/domain/endpoint/events.ts';
import { createCachedEndpoints } from '../../src/endpoints/cached.ts';
import { changeEndpointScope } from '../../src/endpoints/change.ts';
import { revokeEndpoint } from '../../src/endpoints/revoke.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import { newId } from '../../src/ids.ts';
import { useTestRuntime, vendTestEndpoint } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/**
 * The endpoint states the MCP bearer check keeps between requests: folded once, used while the
 * stream's revision is the one they were folded at, folded again once it moves.
 */
describe.runIf(hasPg)('createCachedEndpoints (PostgreSQL)', () => {
  const suite = useTestRuntime('hookline_endpoints_cached');

  /** The store, with its stream reads counted (a kept state is used without reading the stream). */
  const counted = (store: EventStore) => {
    const reads = { n: 0 };
    const proxy = new Proxy(store, {
      get(target, key, receiver) {
        if (key === 'readStream')
          return (...args: Parameters<EventStore['readStream']>) => {
            reads.n++;
            return target.readStream(...args);
          };
        return Reflect.get(target, key, receiver);
      },
    });
    return { store: proxy, reads };
  };

  it('keeps the state while the revision stands; a revoke elsewhere is seen by the next load', async () => {
    const { store: real, clock } = suite.runtime;
    const ep = await vendTestEndpoint(suite.runtime, 'cached');
    const { store, reads } = counted(real);
    const endpoints = createCachedEndpoints(store);
    const stream = endpointStream(ep.endpointId);

    const first = await endpoints(stream);
    expect(first.state.status).toBe('active');
    expect(first.revision).toBe(0n);
    expect(reads.n).toBe(1);
    expect(await endpoints(stream)).toBe(first);
    expect(endpoints.peek(stream)).toBe(first);
    expect(reads.n).toBe(1);

    // Revoked through the real store, not through the cache: as another process would.
    await revokeEndpoint({ store: real, clock }, { ref: ep.slug, operator: 'alice', human: 'alice' });
    expect(endpoints.peek(stream)).toBe(first); // peek is unchecked: it still says active
    const after = await endpoints(stream);
    expect(after.state.status).toBe('revoked');
    expect(after.revision).toBe(1n);
    expect(reads.n).toBe(2);
    expect(await endpoints(stream)).toBe(after);
    expect(reads.n).toBe(2);
  });

  it('a scope change is seen the same way', async () => {
    const { store, clock, db } = suite.runtime;
    const ep = await vendTestEndpoint(suite.runtime, 'rescoped');
    const endpoints = createCachedEndpoints(store);
    const stream = endpointStream(ep.endpointId);
    expect((await endpoints(stream)).state).toMatchObject({ queues: ['inbox'] });
    await changeEndpointScope(
      { store, clock, db },
      { ref: ep.slug, operator: 'alice', human: 'alice', queues: ['inbox', 'more'] },
    );
    expect((await endpoints(stream)).state).toMatchObject({ status: 'active', queues: ['inbox', 'more'] });
  });

  it('an unknown endpoint is none and is not kept, so its vend is seen at once', async () => {
    const { store } = suite.runtime;
    const endpoints = createCachedEndpoints(store);
    const stream = endpointStream(newId('ep'));
    expect(await endpoints(stream)).toEqual({ state: { status: 'none' }, revision: -1n });
    expect(endpoints.peek(stream)).toBeUndefined();
  });

  it('concurrent loads after a revoke all see it', async () => {
    const { store, clock } = suite.runtime;
    const ep = await vendTestEndpoint(suite.runtime, 'crowded');
    const endpoints = createCachedEndpoints(store);
    const stream = endpointStream(ep.endpointId);
    await endpoints(stream);
    await revokeEndpoint({ store, clock }, { ref: ep.endpointId, operator: 'alice', human: 'alice' });
    const all = await Promise.all(Array.from({ length: 16 }, () => endpoints(stream)));
    expect(all.map((a) => a.state.status)).toEqual(Array(16).fill('revoked'));
  });
});
