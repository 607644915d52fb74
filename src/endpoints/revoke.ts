import { type CommandDeps, handleCommand } from '../commands/handle-command.ts';
import { endpointDecider } from '../domain/endpoint/decide.ts';
import { endpointStream } from '../domain/endpoint/events.ts';
import type { EndpointState } from '../domain/endpoint/state.ts';
import { HooklineError } from '../errors.ts';
import type { Position } from '../eventstore/port.ts';
import { resolveEndpointId } from './resolve.ts';

/**
 * POST /api/v1/endpoints/{ref}/revoke: the endpoint refuses its credential, its MCP sessions and
 * todo pushes from then on. Idempotent; `position` is undefined when it was revoked already.
 */
export async function revokeEndpoint(
  deps: CommandDeps,
  input: { readonly ref: string; readonly operator: string; readonly human: string },
): Promise<{ readonly state: EndpointState; readonly position: Position | undefined }> {
  const endpointId = await resolveEndpointId(deps.store, input.ref);
  if (!endpointId) throw new HooklineError('not_found', 'no endpoint of yours has that slug or id');
  const { state, position } = await handleCommand(
    deps,
    endpointStream(endpointId),
    endpointDecider,
    { type: 'RevokeEndpoint', operator: input.operator, human: input.human },
    { retries: 7, conflictMessage: 'the endpoint changed concurrently; retry' },
  );
  return { state, position };
}
