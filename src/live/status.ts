import type { Clock } from '../clock.ts';
import type { TrustMode } from '../domain/delivery/events.ts';

export type Connection = 'receiving' | 'idle';

/** Spec section 6: one provider's line in a StatusSnapshot. */
export interface ProviderActivity {
  readonly name: string;
  readonly trust_mode: TrustMode;
  readonly enabled: boolean;
  /** Deliveries received in the last 24 hours. */
  readonly recent_count: number;
  readonly last_event_at: string | null;
}

export interface StatusSnapshot {
  readonly connection: Connection;
  readonly generated_at: string;
  readonly providers: readonly ProviderActivity[];
}

export interface StatusDeps {
  readonly clock: Clock;
  /** The providers read model with its counters (projections/providers.ts `listProviders`). */
  readonly listProviders: (now: Date) => Promise<readonly ProviderActivity[]>;
}

/** A snapshot from the read models: every provider with its 24-hour count and newest delivery. */
export async function loadStatusSnapshot(deps: StatusDeps, connection: Connection): Promise<StatusSnapshot> {
  const now = deps.clock.now();
  const providers = await deps.listProviders(now);
  return {
    connection,
    generated_at: now.toISOString(),
    providers: providers.map((p) => ({
      name: p.name,
      trust_mode: p.trust_mode,
      enabled: p.enabled,
      recent_count: p.recent_count,
      last_event_at: p.last_event_at,
    })),
  };
}
