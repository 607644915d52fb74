import { type CommandDeps, handleCommand, readAggregate } from '../commands/handle-command.ts';
import { endpointDecider, endpointSlugDecider } from '../domain/endpoint/decide.ts';
import { endpointSlugStream, endpointStream } from '../domain/endpoint/events.ts';
import { type EventStore, isWrongExpectedVersion } from '../eventstore/port.ts';
import { isId } from '../ids.ts';

const SLUG = /^[a-z0-9][a-z0-9-]{0,63}$/;

/** `{ref}` is the `ep_` id or the slug (design.md); the slug resolves through its reservation. */
export async function resolveEndpointId(store: EventStore, ref: string): Promise<string | undefined> {
  if (isId('ep', ref)) return ref;
  if (!SLUG.test(ref)) return undefined;
  const reservation = await readAggregate(store, endpointSlugStream(ref), endpointSlugDecider);
  return reservation.state.endpointId ?? undefined;
}

export const loadEndpoint = (store: EventStore, endpointId: string) =>
  readAggregate(store, endpointStream(endpointId), endpointDecider);

/** Reserves `slug` for the endpoint; false when another endpoint holds it. */
export async function reserveSlug(deps: CommandDeps, slug: string, endpointId: string): Promise<boolean> {
  try {
    await handleCommand(
      deps,
      endpointSlugStream(slug),
      endpointSlugDecider,
      { type: 'ReserveSlug', endpointId, slug },
      { newStream: true, retries: 0 },
    );
    return true;
  } catch (err) {
    if (isWrongExpectedVersion(err)) return false;
    throw err;
  }
}
