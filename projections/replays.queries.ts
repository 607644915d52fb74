import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';

/** One replay attempt as the detail page, the API and MCP show it. */
export interface ReplayAttemptView {
  readonly event_id: number;
  readonly attempt: number;
  readonly target: string;
  readonly outcome: 'delivered' | 'refused' | 'failed';
  readonly status: number | null;
  readonly location: string | null;
  readonly reason: string | null;
  readonly phase: 'call' | 'connect' | null;
  readonly detail: string | null;
  readonly latency_ms: number;
  readonly via: 'api' | 'ui' | 'mcp';
  readonly by: string;
  readonly attempted_at: string;
}

/** A delivery's replay attempts, newest first (at most `limit`, default 50). */
export async function listReplayAttempts(
  db: Kysely<Database>,
  eventId: number,
  limit = 50,
): Promise<ReplayAttemptView[]> {
  const rows = await db
    .selectFrom('replay_attempts')
    .selectAll()
    .where('event_id', '=', eventId)
    .orderBy('attempt', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    event_id: Number(r.event_id),
    attempt: r.attempt,
    target: r.target,
    outcome: r.outcome as ReplayAttemptView['outcome'],
    status: r.status,
    location: r.location,
    reason: r.reason,
    phase: r.phase as ReplayAttemptView['phase'],
    detail: r.detail,
    latency_ms: r.latency_ms,
    via: r.via as ReplayAttemptView['via'],
    by: r.by,
    attempted_at: new Date(r.attempted_at).toISOString(),
  }));
}
