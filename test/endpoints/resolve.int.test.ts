import { describe, expect, it } from 'vitest';
import { endpointSlugStream } from '../../src/domain/endpoint/events.ts';
import { loadEndpoint, reserveSlug, resolveEndpointId } from '../../src/endpoints/resolve.ts';
import { revokeEndpoint } from '../../src/endpoints/revoke.ts';
import { newId } from '../../src/ids.ts';
import { readStream } from '../http/api/client.ts';
import { pushTestTodo, useTestRuntime, vendTestEndpoint } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/**
 * `{ref}` is a slug or an `ep_` id. Resolving it never looks at the operator: every operation on
 * the endpoint decides that, and answers another operator's endpoint as it answers an unknown one.
 */
describe.runIf(hasPg)('resolveEndpointId, loadEndpoint, reserveSlug (PostgreSQL)', () => {
  const suite = useTestRuntime('hookline_endpoints_resolve');
  const deps = () => ({ store: suite.runtime.store, clock: suite.runtime.clock });

  it('a slug resolves through its reservation; an ep_ id is itself', async () => {
    const { store } = suite.runtime;
    const ep = await vendTestEndpoint(suite.runtime, 'resolved');
    expect(await resolveEndpointId(store, ep.slug)).toBe(ep.endpointId);
    expect(await resolveEndpointId(store, ep.endpointId)).toBe(ep.endpointId);
    const loaded = await loadEndpoint(store, ep.endpointId);
    expect(loaded.revision).toBe(0n);
    expect(loaded.state).toMatchObject({
      status: 'active',
      id: ep.endpointId,
      slug: ep.slug,
      operator: 'alice',
    });
  });

  it('an unknown slug or a malformed ref resolves to nothing; an unknown id loads as none', async () => {
    const { store } = suite.runtime;
    expect(await resolveEndpointId(store, 'no-such-slug-abcdef')).toBeUndefined();
    for (const ref of ['', 'UPPER', 'has_underscore', '-leading-dash', 'a'.repeat(65), 'ep_short', 'wh_x']) {
      expect(await resolveEndpointId(store, ref)).toBeUndefined();
    }
    // An id of the right shape is taken as is: loading it finds no endpoint.
    const id = newId('ep');
    expect(await resolveEndpointId(store, id)).toBe(id);
    expect(await loadEndpoint(store, id)).toEqual({ state: { status: 'none' }, revision: -1n });
  });

  it("another operator's endpoint resolves, and every operation on it answers as for an unknown one", async () => {
    const { store } = suite.runtime;
    const ep = await vendTestEndpoint(suite.runtime, 'alices');
    expect(await resolveEndpointId(store, ep.slug)).toBe(ep.endpointId);

    const answer = (e: unknown) => [(e as { code: string }).code, (e as Error).message];
    const pushAs = (ref: string, operator: string) =>
      pushTestTodo(suite.runtime, ref, { operator, human: operator }).catch(answer);
    const revokeAs = (ref: string, operator: string) =>
      revokeEndpoint(deps(), { ref, operator, human: operator }).catch(answer);
    const notFound = ['not_found', 'no endpoint of yours has that slug or id'];

    for (const ref of [ep.slug, ep.endpointId]) {
      expect(await pushAs(ref, 'bob')).toEqual(notFound);
      expect(await revokeAs(ref, 'bob')).toEqual(notFound);
    }
    for (const ref of ['no-such-slug-abcdef', newId('ep')]) {
      expect(await pushAs(ref, 'alice')).toEqual(notFound);
      expect(await revokeAs(ref, 'alice')).toEqual(notFound);
    }
    expect((await loadEndpoint(store, ep.endpointId)).state.status).toBe('active');
  });

  it('a slug is held by its first reservation; a second is refused and changes nothing', async () => {
    const { store } = suite.runtime;
    const slug = `held-${newId('ep').slice(3, 9)}`;
    const first = newId('ep');
    const second = newId('ep');
    expect(await reserveSlug(deps(), slug, first)).toBe(true);
    expect(await reserveSlug(deps(), slug, second)).toBe(false);
    expect(await resolveEndpointId(store, slug)).toBe(first);
    expect((await readStream(store, endpointSlugStream(slug))).map((e) => e.data)).toEqual([
      { endpoint_id: first, slug },
    ]);
  });

  it('of concurrent reservations of one slug exactly one wins', async () => {
    const slug = `raced-${newId('ep').slice(3, 9)}`;
    const ids = Array.from({ length: 8 }, () => newId('ep'));
    const won = await Promise.all(ids.map((id) => reserveSlug(deps(), slug, id)));
    expect(won.filter(Boolean)).toHaveLength(1);
    expect(await resolveEndpointId(suite.runtime.store, slug)).toBe(ids[won.indexOf(true)]);
  });
});
