import { HooklineError } from '../../errors.ts';
import type { EndpointEvent, EndpointSlugEvent } from './events.ts';
import { QUARANTINE, QUEUE_PATTERN, QUEUE_RULE } from './queue.ts';
import type { EndpointState } from './state.ts';
import type { Verb } from './verbs.ts';

export interface VendEndpoint {
  readonly endpointId: string;
  readonly slug: string;
  readonly agentId: string;
  readonly agentName: string;
  readonly operator: string;
  readonly human: string;
  readonly queue: string;
  readonly verbs: readonly Verb[];
  readonly tokenHash: string;
  readonly webhookId: string;
  readonly replayTargets: readonly string[];
  readonly expiresAt: Date | null;
}

/** The scope checks of a vend, run before anything is written (a refused vend mints nothing). */
export function checkVendScope(
  scope: { readonly queue: string; readonly verbs: readonly Verb[]; readonly expiresAt: Date | null },
  now: Date,
): void {
  if (!QUEUE_PATTERN.test(scope.queue)) {
    throw new HooklineError('bad_request', QUEUE_RULE, { field: 'queue' });
  }
  if (scope.queue === QUARANTINE) {
    throw new HooklineError(
      'bad_request',
      '`quarantine` is reserved for held deliveries and cannot be vended',
      {
        field: 'queue',
      },
    );
  }
  if (scope.verbs.length === 0) {
    throw new HooklineError('bad_request', 'verbs must name at least one verb', { field: 'verbs' });
  }
  if (scope.expiresAt && scope.expiresAt.getTime() <= now.getTime()) {
    throw new HooklineError('bad_request', 'expires_at must be in the future', { field: 'expires_at' });
  }
}

export function decideVend(command: VendEndpoint, state: EndpointState, now: Date): EndpointEvent[] {
  if (state.status !== 'none') throw new HooklineError('conflict', `endpoint ${command.endpointId} exists`);
  checkVendScope(command, now);
  return [
    {
      type: 'EndpointVended',
      data: {
        endpoint_id: command.endpointId,
        slug: command.slug,
        agent_id: command.agentId,
        agent_name: command.agentName,
        operator: command.operator,
        queues: [command.queue],
        verbs: [...command.verbs],
        token_hash: command.tokenHash,
        webhook_id: command.webhookId,
        replay_targets: [...command.replayTargets],
        expires_at: command.expiresAt ? command.expiresAt.toISOString() : null,
        vended_by: command.human,
        vended_at: now.toISOString(),
      },
    },
  ];
}

export interface RevokeEndpoint {
  readonly operator: string;
  readonly human: string;
}

/**
 * Only the owner may revoke; anyone else hears "not found", as for an unknown endpoint (spec
 * 4.13's rule, applied to every operation on `{ref}`). Revoking twice changes nothing.
 */
export function decideRevoke(command: RevokeEndpoint, state: EndpointState, now: Date): EndpointEvent[] {
  if (state.status === 'none' || state.operator !== command.operator) {
    throw new HooklineError('not_found', 'no endpoint of yours has that slug or id');
  }
  if (state.status === 'revoked') return [];
  return [
    {
      type: 'EndpointRevoked',
      data: { endpoint_id: state.id, revoked_by: command.human, revoked_at: now.toISOString() },
    },
  ];
}

export const slugReserved = (endpointId: string, slug: string): EndpointSlugEvent => ({
  type: 'EndpointSlugReserved',
  data: { endpoint_id: endpointId, slug },
});
