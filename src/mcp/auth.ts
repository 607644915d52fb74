import { credentialMatches } from '../auth/credentials.ts';
import type { Clock } from '../clock.ts';
import { endpointStream } from '../domain/endpoint/events.ts';
import { type EndpointFacts, type EndpointState, isExpired } from '../domain/endpoint/state.ts';
import { createCachedEndpoints } from '../endpoints/cached.ts';
import { resolveEndpointId } from '../endpoints/resolve.ts';
import { HooklineError } from '../errors.ts';
import type { EventStore } from '../eventstore/port.ts';

/**
 * The MCP bearer (spec 5): the endpoint's vended credential, compared by hash against the
 * endpoint's own stream (not a read model, so a just-vended endpoint works at once and a revoked
 * one stops at once: the state kept between requests is used only while the stream's revision is
 * the one it was folded at, read after the request arrived: by `authenticate`, or with the call's
 * own first read after `onKept`). Every failure is the same 401; which check failed is only logged.
 */
export function createEndpointAuth(deps: { readonly store: EventStore; readonly clock: Clock }) {
  // Slugs never move to another endpoint: their resolution is cached for good.
  const slugs = new Map<string, string>();
  // The endpoint's state is folded once and checked against its stream's revision on every request
  // (one small query instead of reading the stream): a revoke still stops the next request.
  const endpoints = createCachedEndpoints(deps.store);

  /** The bearer against the endpoint's state: its facts, or the 401 of the first check that fails. */
  const check = (state: EndpointState, token: string): EndpointFacts => {
    if (state.status === 'none' || !credentialMatches(token, state.tokenHash)) {
      throw unauthorized('invalid', 'the bearer token is not valid here');
    }
    if (state.status === 'revoked') throw unauthorized('revoked', 'the endpoint is revoked');
    if (isExpired(state, deps.clock.now())) throw unauthorized('expired', 'the endpoint has expired');
    const { status: _status, ...facts } = state;
    return facts;
  };
  const tokenOf = (authorization: string | undefined): string | undefined =>
    (authorization ? /^Bearer\s+(\S+)\s*$/i.exec(authorization) : null)?.[1];

  async function authenticate(slug: string, authorization: string | undefined): Promise<EndpointFacts> {
    const token = tokenOf(authorization);
    if (!token) throw unauthorized('missing', 'an endpoint bearer token is required');
    let endpointId = slugs.get(slug);
    if (!endpointId) {
      endpointId = await resolveEndpointId(deps.store, slug);
      if (!endpointId || endpointId === slug)
        throw unauthorized('invalid', 'the bearer token is not valid here');
      if (slugs.size > 10_000) slugs.clear();
      slugs.set(slug, endpointId);
    }
    const { state } = await endpoints(endpointStream(endpointId));
    return check(state, token);
  }

  /**
   * The bearer checked on the endpoint's state as kept, without asking for its stream's revision:
   * the caller reads the revision with its own first statement and gives the facts only while it
   * is still `revision` (else it calls `authenticate`, which reads the stream again). Undefined
   * when nothing is kept or the bearer fails on the kept state: `authenticate` decides then.
   */
  function onKept(
    slug: string,
    authorization: string | undefined,
  ): { readonly facts: EndpointFacts; readonly streamId: string; readonly revision: bigint } | undefined {
    const token = tokenOf(authorization);
    const endpointId = slugs.get(slug);
    if (!token || !endpointId) return undefined;
    const streamId = endpointStream(endpointId);
    const held = endpoints.peek(streamId);
    if (!held) return undefined;
    try {
      return { facts: check(held.state, token), streamId, revision: held.revision };
    } catch {
      return undefined;
    }
  }

  return Object.assign(authenticate, { onKept });
}

export type EndpointAuth = ReturnType<typeof createEndpointAuth>;

function unauthorized(reason: 'missing' | 'invalid' | 'revoked' | 'expired', detail: string): HooklineError {
  return new HooklineError('unauthorized', detail, {}, { cause: reason });
}
