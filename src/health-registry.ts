/** Optional parts (the broker today) report their state here; /healthz reads it. */
export type ComponentState = 'ok' | 'disabled' | 'error';

export interface HealthRegistry {
  register(name: string, check: () => ComponentState): void;
  snapshot(): Record<string, ComponentState>;
}

export function createHealthRegistry(): HealthRegistry {
  const checks = new Map<string, () => ComponentState>();
  return {
    register: (name, check) => {
      checks.set(name, check);
    },
    snapshot: () => {
      const out: Record<string, ComponentState> = {};
      for (const [name, check] of checks) {
        try {
          out[name] = check();
        } catch {
          out[name] = 'error';
        }
      }
      return out;
    },
  };
}
