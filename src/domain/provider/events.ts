import { z } from 'zod';
import { defineEvent, typesOf } from '../shared.ts';

/** The aggregate's stream: every enable/disable and a generic provider's creation. */
export const providerStream = (name: string): string => `provider-${name}`;

export const GENERIC_TRUST_MODES = ['token', 'open'] as const;
export type GenericTrustMode = (typeof GENERIC_TRUST_MODES)[number];

/**
 * Events of the provider aggregate, stream `provider-<name>`. A generic provider's token is
 * stored only as its SHA-256 (hex); `open` providers have none.
 */
export const GenericProviderCreated = defineEvent(
  'GenericProviderCreated',
  z.object({
    name: z.string(),
    trust_mode: z.enum(GENERIC_TRUST_MODES),
    token_hash: z.string().nullable(),
    created_by: z.string(),
    created_at: z.string(),
  }),
);

const toggled = z.object({ name: z.string(), by: z.string(), at: z.string() });
export const ProviderEnabled = defineEvent('ProviderEnabled', toggled);
export const ProviderDisabled = defineEvent('ProviderDisabled', toggled);

export const providerEvents = [GenericProviderCreated, ProviderEnabled, ProviderDisabled] as const;
export type ProviderEvent = z.infer<(typeof providerEvents)[number]>;
export const PROVIDER_EVENT_TYPES = typesOf(providerEvents);
