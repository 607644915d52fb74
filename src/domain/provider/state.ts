import type { TrustMode } from '../delivery/events.ts';
import type { ProviderEvent } from './events.ts';
import type { ProviderKind } from './names.ts';

export interface ProviderState {
  readonly name: string;
  readonly kind: ProviderKind;
  /** Signed and broker providers exist when configured; generic ones once created. */
  readonly exists: boolean;
  readonly trust_mode: TrustMode;
  readonly enabled: boolean;
  /** Generic `token` providers: SHA-256 hex of the token. */
  readonly token_hash: string | null;
  readonly created_at: string | null;
}

/**
 * The state before any event of the provider's stream. `configured` says whether the environment
 * defines the provider (a signing secret, a broker channel); only such providers can be toggled
 * without having been created.
 */
export function initialProviderState(name: string, kind: ProviderKind, configured: boolean): ProviderState {
  const trust_mode: TrustMode =
    kind === 'codehost' || kind === 'payments' || kind === 'chat'
      ? 'signed'
      : kind === 'broker'
        ? 'queue'
        : kind === 'operator'
          ? 'operator'
          : 'token';
  const toggleable = kind === 'codehost' || kind === 'payments' || kind === 'chat' || kind === 'broker';
  const exists = toggleable && configured;
  return { name, kind, exists, trust_mode, enabled: exists, token_hash: null, created_at: null };
}

export function evolveProvider(state: ProviderState, event: ProviderEvent): ProviderState {
  switch (event.type) {
    case 'GenericProviderCreated':
      return {
        ...state,
        exists: true,
        trust_mode: event.data.trust_mode,
        enabled: false,
        token_hash: event.data.token_hash,
        created_at: event.data.created_at,
      };
    case 'ProviderEnabled':
      return { ...state, enabled: true };
    case 'ProviderDisabled':
      return { ...state, enabled: false };
    default: {
      const never: never = event;
      throw new Error(`unhandled provider event ${JSON.stringify(never)}`);
    }
  }
}
