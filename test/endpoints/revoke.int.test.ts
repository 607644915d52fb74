import { describe, expect, it } from 'vitest';
import { findEndpointBySlug } from '../../projections/endpoints.queries.ts';
import { endpointStream } from '../../src/domain/endpoint/events.ts';
import { DomainError } from '../../src/domain/errors.ts';
import { revokeEndpoint } from '../../src/endpoints/revoke.ts';
import { HooklineError } from '../../src/errors.ts';
import { newId } from '../../src/ids.ts';
import { readStream } from '../http/api/client.ts';
import { pushTestTodo, useTestRuntime, vendTestEndpoint } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/** revokeEndpoint (POST /api/v1/endpoints/{ref}/revoke): one EndpointRevoked, then pushes stop. */
describe.runIf(hasPg)('revokeEndpoint (PostgreSQL)', () => {
  const suite = useTestRuntime('hookline_endpoints_revoke');

  const deps = () => ({ store: suite.runtime.store, clock: suite.runtime.clock });
  const revoke = (ref: string, operator = 'alice') =>
    revokeEndpoint(deps(), { ref, operator, human: `${operator}@example.test` });
  const push = (ref: string) => pushTestTodo(suite.runtime, ref, { title: 'after the revoke' });

  it('appends one EndpointRevoked; the state and the endpoints read model say revoked', async () => {
    const { store, db, projections } = suite.runtime;
    const ep = await vendTestEndpoint(suite.runtime, 'revoked');
    const revoked = await revoke(ep.slug);
    expect(revoked.state.status).toBe('revoked');
    expect(revoked.position).toBeTypeOf('string');
    const events = await readStream(store, endpointStream(ep.endpointId));
    expect(events.map((e) => e.type)).toEqual(['EndpointVended', 'EndpointRevoked']);
    expect(events[1]!.data).toMatchObject({ endpoint_id: ep.endpointId, revoked_by: 'alice@example.test' });

    await projections.waitFor(revoked.position!, { projection: 'endpoints', timeoutMs: 10_000 });
    const row = await findEndpointBySlug(db, ep.slug);
    expect(row?.state).toBe('revoked');
    expect(row?.revoked_at).toBeInstanceOf(Date);
  });

  it('is idempotent: a second revoke (by slug or id) appends nothing and has no position', async () => {
    const ep = await vendTestEndpoint(suite.runtime, 'twice');
    const first = await revoke(ep.endpointId);
    const again = await revoke(ep.slug);
    const third = await revoke(ep.endpointId);
    expect(first.position).toBeTypeOf('string');
    expect([again.position, third.position]).toEqual([undefined, undefined]);
    expect(again.state.status).toBe('revoked');
    expect((await readStream(suite.runtime.store, endpointStream(ep.endpointId))).map((e) => e.type)).toEqual(
      ['EndpointVended', 'EndpointRevoked'],
    );
  });

  it('concurrent revokes append one EndpointRevoked', async () => {
    const ep = await vendTestEndpoint(suite.runtime, 'racing');
    const all = await Promise.all(Array.from({ length: 8 }, () => revoke(ep.slug)));
    expect(all.every((r) => r.state.status === 'revoked')).toBe(true);
    expect(all.filter((r) => r.position !== undefined)).toHaveLength(1);
    expect((await readStream(suite.runtime.store, endpointStream(ep.endpointId))).map((e) => e.type)).toEqual(
      ['EndpointVended', 'EndpointRevoked'],
    );
  });

  it('pushes are refused after it, and nothing of theirs is written', async () => {
    const ep = await vendTestEndpoint(suite.runtime, 'pushed');
    const before = await push(ep.slug);
    expect(before.created).toBe(true);
    await revoke(ep.slug);
    const position = await suite.runtime.store.committedPosition();
    const refused = await push(ep.slug).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DomainError);
    expect((refused as DomainError).code).toBe('endpoint_revoked');
    expect(await suite.runtime.store.committedPosition()).toBe(position);
  });

  it('another operator, an unknown slug and an unknown id are the same not_found; nothing is appended', async () => {
    const ep = await vendTestEndpoint(suite.runtime, 'not-bobs');
    const bobs = await revoke(ep.slug, 'bob').catch((e: unknown) => e);
    const unknownSlug = await revoke('no-such-endpoint').catch((e: unknown) => e);
    const unknownId = await revoke(newId('ep')).catch((e: unknown) => e);
    const malformed = await revoke('Not a ref!').catch((e: unknown) => e);
    expect(unknownSlug).toBeInstanceOf(HooklineError);
    const seen = [bobs, unknownSlug, unknownId, malformed].map((e) => [
      (e as { code: string }).code,
      (e as Error).message,
    ]);
    expect(new Set(seen.map((s) => JSON.stringify(s)))).toEqual(
      new Set([JSON.stringify(['not_found', 'no endpoint of yours has that slug or id'])]),
    );
    expect((await readStream(suite.runtime.store, endpointStream(ep.endpointId))).map((e) => e.type)).toEqual(
      ['EndpointVended'],
    );
  });
});
