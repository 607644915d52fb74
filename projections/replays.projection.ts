import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { decodeEvent } from '../src/domain/events.ts';
import { replayStreamEventId } from '../src/domain/replay/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './engine/types.ts';
import { textSafe } from './pg-safe.ts';
import { createReplayTables } from './replays.table.ts';

const isAttempt = (e: Pick<RecordedEvent, 'streamId' | 'type'>) =>
  e.type === 'ReplayAttempted' && replayStreamEventId(e.streamId) !== undefined;

/** The replay attempts of each delivery: one row an event, keyed by the stream and revision. */
export const replaysProjection: Projection = {
  name: 'replays',
  version: 1,
  tables: ['replay_attempts'],
  createTables: createReplayTables,
  handles: isAttempt,
  // Each row is written once, by its own event, and nothing else touches it.
  commutes: isAttempt,
  async apply(db, events) {
    for (const e of events) await applyOne(db, e);
  },
};

async function applyOne(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  const event = decodeEvent(e);
  if (event.type !== 'ReplayAttempted') return;
  const d = event.data;
  await db
    .insertInto('replay_attempts')
    .values({
      event_id: d.event_id,
      attempt: Number(e.revision),
      target: textSafe(d.target),
      outcome: d.outcome,
      status: d.status,
      location: textSafe(d.location),
      reason: textSafe(d.reason),
      phase: d.phase,
      detail: textSafe(d.detail),
      latency_ms: d.latency_ms,
      via: d.via,
      by: textSafe(d.by),
      endpoint_id: d.endpoint_id,
      attempted_at: new Date(d.attempted_at),
    })
    .onConflict((oc) => oc.columns(['event_id', 'attempt']).doNothing())
    .execute();
}
