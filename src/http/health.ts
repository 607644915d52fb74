import fp from 'fastify-plugin';
import { sql } from 'kysely';
import type { DB } from '../db/database.ts';
import { HooklineError } from '../errors.ts';
import type { HealthRegistry } from '../health-registry.ts';

export interface HealthDeps {
  readonly db: DB;
  readonly health: HealthRegistry;
  readonly version: string;
  /** Checks the event store beyond the SQL database (EventStoreDB in scale-out). */
  readonly storeCheck?: () => Promise<void>;
  readonly timeoutMs?: number;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/**
 * GET /healthz (spec 4.14, 2.7). `db` and `database` both report the SQL database (the spec
 * lists both names); `broker` is `disabled` when none is configured. `status` is `error` (503
 * problem) when the database or event store is unreachable, `degraded` (200) when they are fine
 * but an optional part is not.
 */
export function healthPlugin(deps: HealthDeps) {
  return fp(
    async (app) => {
      app.get('/healthz', async (_request, reply) => {
        let dbState: 'ok' | 'error' = 'ok';
        try {
          await withTimeout(sql`select 1`.execute(deps.db), deps.timeoutMs ?? 2000);
          if (deps.storeCheck) await withTimeout(deps.storeCheck(), deps.timeoutMs ?? 2000);
        } catch {
          dbState = 'error';
        }
        const components = deps.health.snapshot();
        const body = {
          status: 'ok' as 'ok' | 'degraded' | 'error',
          db: dbState,
          database: dbState,
          ...components,
          version: deps.version,
        };
        if (dbState === 'error') {
          throw new HooklineError('unavailable', 'the database is unreachable', {
            health: { ...body, status: 'error' },
          });
        }
        if (Object.values(components).includes('error')) body.status = 'degraded';
        reply.header('cache-control', 'no-store');
        return body;
      });
    },
    { name: 'hookline-health' },
  );
}
