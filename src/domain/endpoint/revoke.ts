import type { Clock } from '../../clock.ts';
import { HooklineError } from '../../errors.ts';
import { jsonEvent } from '../../eventstore/codec.ts';
import { type EventStore, isWrongExpectedVersion, type Position } from '../../eventstore/port.ts';
import { expectedFrom } from './aggregate.ts';
import { decideRevoke } from './decide.ts';
import { loadEndpoint, resolveEndpointId } from './resolve.ts';
import { type EndpointState, endpointStream } from './state.ts';

/**
 * POST /api/v1/endpoints/{ref}/revoke: the endpoint refuses its credential, its MCP sessions and
 * todo pushes from then on. Idempotent; `position` is undefined when it was revoked already.
 */
export async function revokeEndpoint(
  deps: { readonly store: EventStore; readonly clock: Clock },
  input: { readonly ref: string; readonly operator: string; readonly human: string },
): Promise<{ readonly state: EndpointState; readonly position: Position | undefined }> {
  const endpointId = await resolveEndpointId(deps.store, input.ref);
  if (!endpointId) throw new HooklineError('not_found', 'no endpoint of yours has that slug or id');
  for (let attempt = 0; attempt < 8; attempt++) {
    const loaded = await loadEndpoint(deps.store, endpointId);
    const events = decideRevoke(input, loaded.state, deps.clock.now());
    if (events.length === 0) return { state: loaded.state, position: undefined };
    try {
      const appended = await deps.store.append(
        endpointStream(endpointId),
        events.map((e) => jsonEvent(e.type, e.data)),
        { expectedRevision: expectedFrom(loaded.revision) },
      );
      const after = await loadEndpoint(deps.store, endpointId);
      return { state: after.state, position: appended.position };
    } catch (err) {
      if (!isWrongExpectedVersion(err)) throw err;
    }
  }
  throw new HooklineError('conflict', 'the endpoint changed concurrently; retry');
}
