import { dueFriendRequests } from '../../projections/friends.queries.ts';
import type { Clock } from '../clock.ts';
import { createLockedJob } from '../db/advisory-lock.ts';
import type { DB } from '../db/database.ts';
import type { SqlDatabase } from '../db/open.ts';
import type { EventStore } from '../eventstore/port.ts';
import type { Logger } from '../logger.ts';
import { expireFriend } from './edges.ts';

/** A request waits 14 days; a sweep a minute records its end within a minute of it. */
export const DEFAULT_FRIEND_EXPIRY_INTERVAL_MS = 60_000;
/** The first sweep after start: a server that was down records what expired meanwhile soon. */
export const DEFAULT_FRIEND_EXPIRY_INITIAL_DELAY_MS = 10_000;
/** Requests expired per sweep at most; more wait for the next (they read as expired meanwhile). */
const BATCH = 200;
/** Any number; it names the lock that keeps two instances from sweeping at once. */
export const FRIEND_EXPIRY_LOCK_KEY = 7_240_311_502;

export interface FriendExpiryDeps {
  readonly store: EventStore;
  readonly db: DB;
  readonly sql: Pick<SqlDatabase, 'pool'>;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface FriendExpiryOptions {
  readonly intervalMs?: number;
  readonly initialDelayMs?: number;
}

export interface FriendExpiry {
  /** One sweep now: how many requests it recorded as expired; null when another instance sweeps. */
  runOnce(): Promise<number | null>;
  start(): void;
  stop(): Promise<void>;
}

/**
 * The expiry of friend requests (default 14 days, the issue "Friends"): every interval it reads
 * the pending requests past their expiry, by the injected clock, from the `friends` read model
 * and records FriendExpired on each one's stream through the friend decider, which appends
 * nothing for an edge approved, declined or withdrawn meanwhile. So an untouched request ends as
 * `expired` in the log, the read model, the Friends screen, the API and its A2A task (`failed`).
 * One instance sweeps at a time (a session advisory lock); a move refused as expired records the
 * expiry too, so the sweep is the backstop, not the only writer.
 */
export function createFriendExpiry(deps: FriendExpiryDeps, options: FriendExpiryOptions = {}): FriendExpiry {
  return createLockedJob({
    pool: deps.sql.pool,
    lockKey: FRIEND_EXPIRY_LOCK_KEY,
    intervalMs: options.intervalMs ?? DEFAULT_FRIEND_EXPIRY_INTERVAL_MS,
    initialDelayMs: options.initialDelayMs ?? DEFAULT_FRIEND_EXPIRY_INITIAL_DELAY_MS,
    onError: (err) => deps.logger.warn({ err }, 'friend expiry: sweep failed; retrying next interval'),
    async work(stopped) {
      let expired = 0;
      for (const id of await dueFriendRequests(deps.db, deps.clock.now(), BATCH)) {
        if (stopped()) break;
        if ((await expireFriend(deps, id)).events.length > 0) expired++;
      }
      if (expired > 0) deps.logger.info({ expired }, 'friend requests expired');
      return expired;
    },
  });
}
