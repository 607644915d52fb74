import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';

export interface Candidate {
  readonly id: string;
  readonly createdAt: Date;
}

/**
 * Pending todos of an endpoint's queues, oldest first, strictly after a (created_at, id) cursor:
 * claim_next's candidates. The read model may lag; the claim itself checks the todo's stream.
 */
export async function pendingCandidates(
  db: Kysely<Database>,
  filter: {
    readonly endpointId: string;
    readonly queues: readonly string[];
    readonly after: Candidate | undefined;
    readonly limit: number;
  },
): Promise<Candidate[]> {
  if (filter.queues.length === 0) return [];
  let q = db
    .selectFrom('todos')
    .select(['id', 'created_at'])
    .where('endpoint_id', '=', filter.endpointId)
    .where('queue', 'in', [...filter.queues])
    .where('state', '=', 'pending');
  const after = filter.after;
  if (after) {
    q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(after.createdAt, after.id)));
  }
  const rows = await q.orderBy('created_at').orderBy('id').limit(filter.limit).execute();
  return rows.map((r) => ({ id: r.id, createdAt: new Date(r.created_at) }));
}

/** Claimed todos whose lease ran out by `now`: the expiry job's work list. */
export async function expiredLeases(
  db: Kysely<Database>,
  now: Date,
  limit: number,
): Promise<{ readonly id: string; readonly leaseId: string }[]> {
  const rows = await db
    .selectFrom('todos')
    .select(['id', 'claimed_by'])
    .where('state', '=', 'claimed')
    .where('lease_expires_at', '<=', now)
    .orderBy('lease_expires_at')
    .limit(limit)
    .execute();
  return rows.flatMap((r) => (r.claimed_by ? [{ id: r.id, leaseId: r.claimed_by }] : []));
}
