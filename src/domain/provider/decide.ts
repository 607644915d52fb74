import { DomainError } from '../errors.ts';
import type { Decider } from '../shared.ts';
import { type GenericTrustMode, PROVIDER_EVENT_TYPES, type ProviderEvent } from './events.ts';
import type { ProviderKind } from './names.ts';
import { evolveProvider, initialProviderState, type ProviderState } from './state.ts';

export type ProviderCommand =
  | {
      readonly type: 'CreateGenericProvider';
      readonly name: string;
      readonly trust_mode: GenericTrustMode;
      readonly token_hash: string | null;
      readonly by: string;
    }
  | {
      readonly type: 'SetProviderEnabled';
      readonly name: string;
      readonly enabled: boolean;
      readonly by: string;
    };

/** Pure: the events a command produces against the provider's current state. */
export function decideProvider(command: ProviderCommand, state: ProviderState, now: Date): ProviderEvent[] {
  const at = now.toISOString();
  switch (command.type) {
    case 'CreateGenericProvider': {
      if (state.kind !== 'generic')
        throw new DomainError('invalid_body', 'only generic providers can be created');
      if (state.exists) throw new DomainError('conflict', `provider ${command.name} already exists`);
      if ((command.trust_mode === 'token') !== (command.token_hash !== null)) {
        throw new DomainError('invalid_body', 'a token provider needs a token hash; an open one has none');
      }
      return [
        {
          type: 'GenericProviderCreated',
          data: {
            name: command.name,
            trust_mode: command.trust_mode,
            token_hash: command.token_hash,
            created_by: command.by,
            created_at: at,
          },
        },
      ];
    }
    case 'SetProviderEnabled': {
      if (!state.exists) throw new DomainError('not_found', `no provider named ${command.name}`);
      if (state.enabled === command.enabled) return []; // already so: nothing happened
      const data = { name: command.name, by: command.by, at };
      return [command.enabled ? { type: 'ProviderEnabled', data } : { type: 'ProviderDisabled', data }];
    }
    default: {
      const never: never = command;
      throw new Error(`unhandled provider command ${JSON.stringify(never)}`);
    }
  }
}

/**
 * The provider's decider. Its initial state depends on the provider: its kind (from the name)
 * and whether the environment configures it (a signing secret, a broker channel).
 */
export const providerDecider = (
  name: string,
  kind: ProviderKind,
  configured: boolean,
): Decider<ProviderCommand, ProviderState, ProviderEvent> => ({
  initialState: () => initialProviderState(name, kind, configured),
  evolve: evolveProvider,
  decide: decideProvider,
  eventTypes: PROVIDER_EVENT_TYPES,
});
