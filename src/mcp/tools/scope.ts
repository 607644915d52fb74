import type { EndpointFacts } from '../../domain/endpoint/state.ts';
import { QUARANTINE } from '../../domain/queue.ts';
import type { Caller } from '../../domain/todo/decide.ts';
import { HooklineError } from '../../errors.ts';

/** The queues an endpoint drains; `quarantine` never, whatever its scope says (spec 3). */
export const drainQueues = (endpoint: EndpointFacts): string[] =>
  endpoint.queues.filter((q) => q !== QUARANTINE);

export const callerOf = (endpoint: EndpointFacts): Caller => ({
  endpointId: endpoint.id,
  queues: drainQueues(endpoint),
});

/** A queue named by the agent must be one it drains; none named means all of them. */
export function queuesFor(endpoint: EndpointFacts, queue: string | undefined): string[] {
  const all = drainQueues(endpoint);
  if (queue === undefined) return all;
  if (!all.includes(queue)) {
    throw new HooklineError(
      'forbidden',
      `queue ${queue} is outside this endpoint's scope (${all.join(', ')})`,
    );
  }
  return [queue];
}
