import type { EventStore } from '../../eventstore/port.ts';
import { loadAggregate } from './aggregate.ts';
import type { EndpointEvent, EndpointSlugEvent } from './events.ts';
import { isEndpointEventType } from './events.ts';
import { isId } from './ids.ts';
import {
  type EndpointState,
  endpointSlugStream,
  endpointStream,
  evolveEndpoint,
  initialEndpointState,
} from './state.ts';

const SLUG = /^[a-z0-9][a-z0-9-]{0,63}$/;

/** `{ref}` is the `ep_` id or the slug (design.md); the slug resolves through its reservation. */
export async function resolveEndpointId(store: EventStore, ref: string): Promise<string | undefined> {
  if (isId('ep', ref)) return ref;
  if (!SLUG.test(ref)) return undefined;
  const reservation = await loadAggregate<string | undefined, EndpointSlugEvent>(
    store,
    endpointSlugStream(ref),
    undefined,
    (held, e) => held ?? e.data.endpoint_id,
    (t) => t === 'EndpointSlugReserved',
  );
  return reservation.state;
}

export const loadEndpoint = (store: EventStore, endpointId: string) =>
  loadAggregate<EndpointState, EndpointEvent>(
    store,
    endpointStream(endpointId),
    initialEndpointState,
    evolveEndpoint,
    isEndpointEventType,
  );
