import type { ComponentState } from '../../src/health-registry.ts';
import type { ProjectionRunner } from './types.ts';

export interface ProjectionLag {
  /** The largest backlog of any projection, counted up to `lagCap`. */
  readonly events: number;
  /** Age of the oldest event some projection has not applied yet, in seconds. */
  readonly seconds: number;
  /** Each projection's own lag, in the runner's order (GET /metrics: one sample per read model). */
  readonly byProjection: readonly {
    readonly name: string;
    readonly events: number;
    readonly seconds: number;
  }[];
}

export interface ProjectionHealth {
  /** For the health registry: `error` (so /healthz says `degraded`) when a read model lags too far or status fails. */
  state(): ComponentState;
  /** The last measured lag, for /healthz or metrics; undefined before the first measurement. */
  lag(): ProjectionLag | undefined;
  /** Measures now (the timer also does, every `refreshMs`). */
  refresh(): Promise<void>;
  stop(): void;
}

export interface ProjectionHealthOptions {
  readonly refreshMs?: number;
  /** A read model this many seconds behind the log makes the service `degraded`. */
  readonly degradedAfterSeconds?: number;
  readonly lagCap?: number;
}

/**
 * Projection lag for /healthz, measured in the background: the health route is hit often (load
 * balancers) and must stay one cheap `select 1`, so it reads the last measurement instead.
 */
export function createProjectionHealth(
  runner: ProjectionRunner,
  options: ProjectionHealthOptions = {},
): ProjectionHealth {
  const degradedAfter = options.degradedAfterSeconds ?? 60;
  let last: ProjectionLag | undefined;
  let failed = false;
  let inflight: Promise<void> | undefined;

  const refresh = (): Promise<void> => {
    inflight ??= (async () => {
      try {
        const statuses = await runner.status({ lagCap: options.lagCap ?? 10_000 });
        last = {
          events: Math.max(0, ...statuses.map((s) => s.lagEvents)),
          seconds: Math.max(0, ...statuses.map((s) => s.lagSeconds)),
          byProjection: statuses.map((s) => ({ name: s.name, events: s.lagEvents, seconds: s.lagSeconds })),
        };
        failed = false;
      } catch {
        failed = true;
      } finally {
        inflight = undefined;
      }
    })();
    return inflight;
  };

  const timer = setInterval(() => void refresh(), options.refreshMs ?? 5000);
  timer.unref();
  void refresh();

  return {
    state: () => (failed || (last !== undefined && last.seconds > degradedAfter) ? 'error' : 'ok'),
    lag: () => last,
    refresh,
    stop: () => clearInterval(timer),
  };
}
