import { beforeEach, describe, expect, it } from 'vitest';
import { logProjection } from '../../projections/log.projection.ts';
import {
  eventDetail,
  findDeliveryByUuid,
  getLoggedDelivery,
  listEvents,
  logIdRange,
  logRetainedFrom,
  recentCounts,
} from '../../projections/log.queries.ts';
import { delivery, projectionSpec, recorded, resetStreams } from '../support/projection-spec.ts';
import { postgresAvailable } from '../support/services.ts';

const t = (s: number) => new Date(Date.UTC(2026, 10, 22, 10, 0, s)).toISOString();

describe.runIf(await postgresAvailable())('log read model: given events, then rows', () => {
  const spec = projectionSpec(logProjection);
  beforeEach(resetStreams);

  it('one row per delivery, its id the revision + 1, newest first, with its bytes and headers', async () => {
    const first = delivery(
      { provider: 'codehost', received_at: t(1), event_type: 'push', headers: { a: 'b' } },
      '{"x":1}',
    );
    await spec
      .given(first, delivery({ provider: 'generic:ci', received_at: t(2), trust_mode: 'token' }))
      .thenRows(async (db) => {
        const page = await listEvents(db, {});
        expect(page.events.map((e) => [e.id, e.provider])).toEqual([
          [2, 'generic:ci'],
          [1, 'codehost'],
        ]);
        const row = await getLoggedDelivery(db, 1);
        // The row keeps the summary; the headers and the bytes come from the event itself.
        expect(row).not.toHaveProperty('payload');
        const detail = eventDetail(row!, first);
        expect(detail).toMatchObject({
          event_type: 'push',
          headers: { a: 'b' },
          payload: '{"x":1}',
          disposition: null,
        });
        expect((await findDeliveryByUuid(db, first.id))?.id).toBe(1);
        expect(await recentCounts(db, new Date(t(0)))).toEqual(
          new Map([
            ['codehost', 1],
            ['generic:ci', 1],
          ]),
        );
      });
  });

  it('a disposition marks its delivery; a retention run prunes below its point, and remembers it', async () => {
    await spec
      .given(
        delivery({ provider: 'webhook:wh_1', received_at: t(1) }),
        delivery({ provider: 'webhook:wh_1', received_at: t(2) }),
        delivery({ provider: 'webhook:wh_1', received_at: t(3) }),
        recorded('dispositions-wh_1', {
          type: 'DeliveryDisposed',
          data: {
            event_id: 3,
            webhook_id: 'wh_1',
            endpoint_id: 'ep_1',
            operator: 'admin',
            disposition: 'dropped',
            queue: null,
            todo_id: null,
            rule: { id: 'r', index: 0 },
            reason: null,
            message: null,
            rules_version: 1,
            disposed_at: t(3),
          },
        }),
        recorded('retention', {
          type: 'RetentionRan',
          data: {
            ran_at: t(4),
            max_age_days: 0,
            max_rows: 1,
            truncated_before_id: 3,
            removed_events: 2,
            removed_rows: 2,
            log_before_id: 3,
            duration_ms: 1,
          },
        }),
      )
      .thenRows(async (db) => {
        expect(await logIdRange(db)).toEqual({ min: 3, max: 3 });
        expect((await getLoggedDelivery(db, 3))?.disposition).toBe('dropped');
        expect(await logRetainedFrom(db)).toBe(3);
      });
  });
  it('marks a delivery with the disposition that comes in a later batch, and the last one wins', async () => {
    const disposed = (eventId: number, disposition: 'routed' | 'held' | 'dropped') =>
      recorded('dispositions-wh_1', {
        type: 'DeliveryDisposed',
        data: {
          event_id: eventId,
          webhook_id: 'wh_1',
          endpoint_id: 'ep_1',
          operator: 'admin',
          disposition,
          queue: disposition === 'routed' ? 'inbox' : null,
          todo_id: null,
          rule: { id: 'r', index: 0 },
          reason: null,
          message: null,
          rules_version: 1,
          disposed_at: t(3),
        },
      });
    await spec
      .givenBatches(
        [
          delivery({ provider: 'webhook:wh_1', received_at: t(1) }),
          disposed(1, 'routed'),
          delivery({ provider: 'webhook:wh_1', received_at: t(2) }),
        ],
        [
          disposed(2, 'held'),
          delivery({ provider: 'webhook:wh_1', received_at: t(3) }),
          disposed(1, 'dropped'),
        ],
      )
      .thenRows(async (db) => {
        expect((await getLoggedDelivery(db, 1))?.disposition).toBe('dropped');
        expect((await getLoggedDelivery(db, 2))?.disposition).toBe('held');
        expect((await getLoggedDelivery(db, 3))?.disposition).toBeNull();
      });
  });
});
