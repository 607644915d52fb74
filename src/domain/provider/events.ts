export type GenericTrustMode = 'token' | 'open';

/**
 * Events of the provider aggregate, stream `provider-<name>`. A generic provider's token is
 * stored only as its SHA-256 (hex); `open` providers have none.
 */
export type ProviderEvent =
  | {
      readonly type: 'GenericProviderCreated';
      readonly data: {
        readonly name: string;
        readonly trust_mode: GenericTrustMode;
        readonly token_hash: string | null;
        readonly created_by: string;
        readonly created_at: string;
      };
    }
  | {
      readonly type: 'ProviderEnabled';
      readonly data: { readonly name: string; readonly by: string; readonly at: string };
    }
  | {
      readonly type: 'ProviderDisabled';
      readonly data: { readonly name: string; readonly by: string; readonly at: string };
    };

export type ProviderEventType = ProviderEvent['type'];

export const PROVIDER_EVENT_TYPES: readonly ProviderEventType[] = [
  'GenericProviderCreated',
  'ProviderEnabled',
  'ProviderDisabled',
];

export const isProviderEventType = (t: string): t is ProviderEventType =>
  (PROVIDER_EVENT_TYPES as readonly string[]).includes(t);
