import { beforeEach, describe, expect, it } from 'vitest';
import { replaysProjection } from '../../projections/replays.projection.ts';
import { listReplayAttempts } from '../../projections/replays.queries.ts';
import type { ReplayAttemptedData } from '../../src/domain/replay/events.ts';
import { projectionSpec, recorded, resetStreams } from '../support/projection-spec.ts';
import { postgresAvailable } from '../support/services.ts';

const attemptEvent = (eventId: number, over: Partial<ReplayAttemptedData> = {}) =>
  ({
    type: 'ReplayAttempted',
    data: {
      event_id: eventId,
      target: 'https://example.com/hook',
      outcome: 'delivered',
      status: 200,
      location: null,
      reason: null,
      phase: null,
      detail: null,
      latency_ms: 12,
      via: 'api',
      by: 'admin',
      endpoint_id: null,
      attempted_at: '2026-11-25T01:00:00.000Z',
      ...over,
    },
  }) as const;
const attempt = (eventId: number, over: Partial<ReplayAttemptedData> = {}) =>
  recorded(`replays-${eventId}`, attemptEvent(eventId, over));

describe.runIf(await postgresAvailable())('replays read model: given events, then rows', () => {
  const spec = projectionSpec(replaysProjection);
  beforeEach(resetStreams);

  it('lists each delivery’s attempts, newest first, numbered by their revision on its stream', async () => {
    await spec
      .given(
        attempt(7),
        attempt(8, { via: 'mcp', by: 'bot-abc123', endpoint_id: 'ep_1' }),
        attempt(7, {
          outcome: 'refused',
          status: null,
          reason: 'address',
          phase: 'call',
          detail: 'loopback\u0000address',
          via: 'ui',
          by: 'alice',
        }),
        // Not a replay stream: ignored.
        recorded('replays-x', attemptEvent(9)),
      )
      .thenRows(async (db) => {
        const seven = await listReplayAttempts(db, 7);
        expect(seven.map((a) => [a.attempt, a.outcome, a.reason, a.via, a.by])).toEqual([
          [1, 'refused', 'address', 'ui', 'alice'],
          [0, 'delivered', null, 'api', 'admin'],
        ]);
        // A NUL (from a remote error text) is stored, not a stalled read model.
        expect(seven[0]!.detail).toBe('loopback\uFFFDaddress');
        expect(seven[1]).toMatchObject({
          status: 200,
          latency_ms: 12,
          attempted_at: '2026-11-25T01:00:00.000Z',
        });
        expect((await listReplayAttempts(db, 8)).map((a) => [a.attempt, a.via, a.by])).toEqual([
          [0, 'mcp', 'bot-abc123'],
        ]);
        expect(await listReplayAttempts(db, 9)).toEqual([]);
      });
  });
});
