import {
  deleteLogRowsBelow,
  firstDeliveryIdSince,
  logIdRange,
  logRetainedFrom,
} from '../../projections/log.queries.ts';
import { getSettings } from '../../projections/settings.queries.ts';
import type { Clock } from '../clock.ts';
import { appendEvents } from '../commands/handle-command.ts';
import { createLockedJob } from '../db/advisory-lock.ts';
import type { DB } from '../db/database.ts';
import type { SqlDatabase } from '../db/open.ts';
import { DELIVERIES_STREAM } from '../domain/delivery/events.ts';
import {
  RETENTION_EVENTS_KEPT,
  RETENTION_STREAM,
  type RetentionRanData,
} from '../domain/retention/events.ts';
import type { Settings } from '../domain/settings/state.ts';
import type { EventStore } from '../eventstore/port.ts';
import type { Logger } from '../logger.ts';

/** One prune cycle a minute (docs/reference/screens.md, settings). */
export const DEFAULT_RETENTION_INTERVAL_MS = 60_000;
/** Rows deleted per transaction: each transaction stays short (design.md, PostgreSQL hygiene). */
export const DEFAULT_RETENTION_BATCH = 1000;
/** Any number; it names the lock that keeps two instances from pruning at once. */
const ADVISORY_LOCK_KEY = 7_240_311_501;

export interface RetentionDeps {
  readonly store: EventStore;
  readonly db: DB;
  readonly sql: Pick<SqlDatabase, 'kind' | 'pool'>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The settings in force; default the settings read model. */
  readonly settings?: () => Promise<Settings>;
}

export interface RetentionOptions {
  readonly intervalMs?: number;
  readonly batchSize?: number;
  /** Delay of the first cycle after start. */
  readonly initialDelayMs?: number;
}

export interface RetentionJob {
  /** One cycle now; null when another instance holds the prune lock. */
  runOnce(): Promise<RetentionRanData | null>;
  start(): void;
  stop(): Promise<void>;
}

const DAY_MS = 86_400_000;
const yieldToIo = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Enforces retention_max_age_days and retention_max_rows (0 = unlimited): the `deliveries`
 * stream is truncated below the first delivery to keep, and the log read model loses the same
 * rows in small batches. Only deliveries are pruned (design.md "Retention"). Each cycle is
 * recorded as a RetentionRan event, for the settings screen and for the log projection, which
 * applies `log_before_id` itself: a rebuild reproduces the prunes whatever the store still holds.
 */
export function createRetentionJob(deps: RetentionDeps, options: RetentionOptions = {}): RetentionJob {
  const intervalMs = options.intervalMs ?? DEFAULT_RETENTION_INTERVAL_MS;
  const batchSize = options.batchSize ?? DEFAULT_RETENTION_BATCH;
  const readSettings = deps.settings ?? (async () => (await getSettings(deps.db)).settings);

  /** The first event id to keep, from both limits; ids below it go. */
  async function keepFrom(settings: Settings, lastId: number, now: Date): Promise<number> {
    let keep = 1;
    if (settings.retention_max_rows > 0) keep = Math.max(keep, lastId - settings.retention_max_rows + 1);
    if (settings.retention_max_age_days > 0) {
      const cutoff = new Date(now.getTime() - settings.retention_max_age_days * DAY_MS);
      const firstRecent = await firstDeliveryIdSince(deps.db, cutoff);
      if (firstRecent !== undefined) keep = Math.max(keep, firstRecent);
      else {
        // Nothing recent in the read model: everything it holds is old. Deliveries it has not
        // applied yet are not judged, so a lagging projection never loses a new delivery.
        const { max } = await logIdRange(deps.db);
        if (max !== null) keep = Math.max(keep, max + 1);
      }
    }
    return keep;
  }

  async function deleteLogRows(belowId: number, stopped: () => boolean): Promise<number> {
    let removed = 0;
    for (;;) {
      const n = await deleteLogRowsBelow(deps.db, belowId, batchSize);
      removed += n;
      if (n < batchSize || stopped()) return removed;
      await yieldToIo();
    }
  }

  /**
   * The first id the log keeps from now on, for the log projection to apply (and a rebuild to
   * repeat): the limits' keep point, and never below what the log has already lost: its lowest
   * row (rows below it were pruned, by an interrupted cycle too) and the point it recorded.
   */
  async function logBeforeId(keep: number): Promise<number | null> {
    const { min } = await logIdRange(deps.db);
    const recorded = await logRetainedFrom(deps.db);
    const before = Math.max(keep, recorded, min ?? 0);
    return before > 1 ? before : null;
  }

  async function cycle(stopped: () => boolean): Promise<RetentionRanData> {
    const started = Date.now();
    const now = deps.clock.now();
    const settings = await readSettings();
    const info = await deps.store.streamInfo(DELIVERIES_STREAM);
    let removedEvents = 0;
    let truncatedBeforeId: number | null = null;
    let removedRows = 0;
    let keep = 1;
    if (info.revision >= 0n && (settings.retention_max_rows > 0 || settings.retention_max_age_days > 0)) {
      const lastId = Number(info.revision) + 1;
      keep = Math.min(await keepFrom(settings, lastId, now), lastId + 1);
      const beforeRevision = BigInt(keep - 1);
      if (beforeRevision > info.truncateBefore) {
        await deps.store.truncateStream(DELIVERIES_STREAM, beforeRevision);
        removedEvents = Number(beforeRevision - info.truncateBefore);
        truncatedBeforeId = keep;
      }
      removedRows = await deleteLogRows(keep, stopped);
      if (removedRows > 0 && truncatedBeforeId === null) truncatedBeforeId = keep;
    }
    const data: RetentionRanData = {
      ran_at: now.toISOString(),
      max_age_days: settings.retention_max_age_days,
      max_rows: settings.retention_max_rows,
      truncated_before_id: truncatedBeforeId,
      removed_events: removedEvents,
      removed_rows: removedRows,
      log_before_id: await logBeforeId(keep),
      duration_ms: Date.now() - started,
    };
    const appended = await appendEvents(deps.store, RETENTION_STREAM, [{ type: 'RetentionRan', data }]);
    const oldest = appended.nextExpectedRevision + 1n - BigInt(RETENTION_EVENTS_KEPT);
    if (oldest > 0n && appended.nextExpectedRevision % 10n === 0n) {
      await deps.store.truncateStream(RETENTION_STREAM, oldest);
    }
    if (removedEvents > 0 || removedRows > 0) {
      deps.logger.info({ removedEvents, removedRows, truncatedBeforeId }, 'retention: pruned deliveries');
    }
    return data;
  }

  // One instance prunes at a time, in every mode.
  return createLockedJob({
    pool: deps.sql.pool,
    lockKey: ADVISORY_LOCK_KEY,
    intervalMs,
    initialDelayMs: options.initialDelayMs ?? 10_000,
    onError: (err) => deps.logger.warn({ err }, 'retention: cycle failed; retrying next interval'),
    work: cycle,
  });
}
