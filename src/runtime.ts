import { createProjectionHealth, type ProjectionLag } from '../projections/engine/lag-health.ts';
import { createProjectionRunner } from '../projections/engine/runner.ts';
import type { ProjectionRunner } from '../projections/engine/types.ts';
import { allProjections } from '../projections/index.ts';
import type { RuleEngine, RuleEngineOptions } from '../rules-sandbox/index.ts'; // RULES (issue 7)
import { type Clock, systemClock } from './clock.ts';
import type { Config } from './config.ts';
import type { DB } from './db/database.ts';
import type { SqlDatabase } from './db/open.ts';
import { prepareDatabase } from './db/prepare.ts';
import type { EventStore } from './eventstore/port.ts';
import { createSqlEventStore } from './eventstore/sql/store.ts';
import { createHealthRegistry, type HealthRegistry } from './health-registry.ts';
import { createLogger, type Logger } from './logger.ts';
import type { ReplayClient, ReplayClientOptions } from './replay/index.ts'; // RULES (issue 7)
import { createLazyReplayClient } from './replay/lazy.ts'; // RULES (issue 7)
import { createLazyRuleEngine } from './rules/engine.ts'; // RULES (issue 7)
import { assertQuarantineReserved } from './rules/reserved-queue.ts'; // RULES (issue 7)

/**
 * Everything a running hookline holds, built once and passed explicitly (style.md §3). Tests build
 * one over a fresh data directory (embedded mode's own PostgreSQL) or a fresh PostgreSQL database.
 */
export interface Runtime {
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly sql: SqlDatabase;
  readonly db: DB;
  readonly store: EventStore;
  readonly projections: ProjectionRunner;
  readonly health: HealthRegistry;
  /** The read models' last measured lag behind the log (undefined before the first, or without projections). */
  readonly projectionLag: () => ProjectionLag | undefined;
  /** RULES (issue 7): the one rule sandbox of this process (started on first use, closed with it). */
  readonly rules: RuleEngine;
  /** RULES (issue 7): outbound replay through the SSRF guard. */
  readonly replay: ReplayClient;
  /** Registers work to stop on close, in reverse order of registration (consumers, timers). */
  onClose(hook: () => Promise<void> | void): void;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** Embedded mode, tests: a database of its own on the data directory's server (default: the one `pg/hookline.json` names). */
  readonly embeddedDatabase?: string;
  /**
   * The database, opened and migrated already (db/prepare.ts): `hookline serve` begins that before
   * it loads the server's modules. The runtime owns it from here (closes it, also on a failed start).
   */
  readonly database?: Promise<SqlDatabase>;
  /** Start the projection workers (default true). */
  readonly startProjections?: boolean;
  /** RULES (issue 7): rule engine limits (tests: a sandbox that cannot start). */
  readonly ruleEngine?: RuleEngineOptions;
  /** RULES (issue 7), tests only: address classification and CA for a test's own HTTPS server. */
  readonly replay?: ReplayClientOptions;
}

async function openStore(config: Config, sql: SqlDatabase): Promise<EventStore> {
  if (config.mode === 'scale-out' && config.eventStoreUrl) {
    // Imported lazily: only scale-out loads the EventStoreDB client.
    const { createEventStoreDbStore } = await import('./eventstore/eventstoredb.ts');
    return createEventStoreDbStore(config.eventStoreUrl);
  }
  return createSqlEventStore(sql);
}

export async function createRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const logger = options.logger ?? createLogger(config);
  const clock = options.clock ?? systemClock;
  const sql = await (options.database ?? prepareDatabase(config, logger, options));
  const closeHooks: Array<() => Promise<void> | void> = [];
  let store: EventStore | undefined;
  try {
    store = await openStore(config, sql);
    // RULES (issue 7): spec 9, 0.4.0 item 7. Only a runtime that serves refuses to start; the
    // maintenance commands (`hookline projections ...`, no projections started) must still run.
    if (options.startProjections !== false) await assertQuarantineReserved(sql.db);
    const projections = createProjectionRunner({ sql, store, logger, projections: allProjections });
    if (options.startProjections !== false) await projections.start();
    let closing: Promise<void> | undefined;
    const health = createHealthRegistry();
    let projectionLag: () => ProjectionLag | undefined = () => undefined;
    if (options.startProjections !== false) {
      // /healthz says `projections: error` (status degraded) when a read model is over 60 s behind.
      const projectionHealth = createProjectionHealth(projections);
      projectionLag = () => projectionHealth.lag();
      health.register('projections', projectionHealth.state);
      closeHooks.push(() => projectionHealth.stop());
    }
    const rules = createLazyRuleEngine({ logger, ...options.ruleEngine }); // RULES (issue 7)
    const replay = createLazyReplayClient(options.replay); // RULES (issue 7)
    closeHooks.push(
      () => rules.close(),
      () => replay.close(),
    ); // RULES (issue 7): closed last
    const runtime: Runtime = {
      config,
      logger,
      clock,
      sql,
      db: sql.db,
      store,
      projections,
      health,
      projectionLag: () => projectionLag(),
      rules,
      replay,
      onClose: (hook) => {
        closeHooks.push(hook);
      },
      close: () => {
        closing ??= (async () => {
          for (const hook of closeHooks.reverse()) {
            try {
              await hook();
            } catch (err) {
              logger.error({ err }, 'error while closing');
            }
          }
          await projections.stop();
          await store?.close();
          await sql.close();
        })();
        return closing;
      },
    };
    return runtime;
  } catch (err) {
    await store?.close().catch(() => {});
    await sql.close().catch(() => {});
    throw err;
  }
}
