import { beforeEach, describe, expect, it } from 'vitest';
import { quarantineProjection } from '../../projections/quarantine.projection.ts';
import { findHeld, listQuarantine } from '../../projections/quarantine.queries.ts';
import type { DeliveryDisposedEvent } from '../../src/domain/webhook/events.ts';
import { projectionSpec, recorded, resetStreams } from '../support/projection-spec.ts';
import { postgresAvailable } from '../support/services.ts';

const at = '2026-11-22T10:00:00.000Z';
const disposed = (todoId: string | null, disposition: DeliveryDisposedEvent['data']['disposition']) =>
  recorded('dispositions-wh_1', {
    type: 'DeliveryDisposed',
    data: {
      event_id: 7,
      webhook_id: 'wh_1',
      endpoint_id: 'ep_1',
      operator: 'admin',
      disposition,
      queue: disposition === 'dropped' ? null : 'quarantine',
      todo_id: todoId,
      rule: { id: 'r1', index: 0 },
      reason: disposition === 'faulted' ? 'timeout' : null,
      message: disposition === 'faulted' ? 'deadline' : null,
      rules_version: 2,
      disposed_at: at,
    },
  });

describe.runIf(await postgresAvailable())('quarantine read model: given events, then rows', () => {
  const spec = projectionSpec(quarantineProjection);
  beforeEach(resetStreams);

  it('holds faulted and held deliveries (not routed or dropped ones), and records a release', async () => {
    await spec
      .given(
        disposed('td_f', 'faulted'),
        disposed('td_h', 'held'),
        disposed('td_r', 'routed'),
        disposed(null, 'dropped'),
        recorded('quarantine-release-td_h', {
          type: 'QuarantineReleased',
          data: {
            held_todo_id: 'td_h',
            todo_id: 'td_new',
            queue: 'inbox',
            endpoint_id: 'ep_1',
            operator: 'admin',
            event_id: 7,
            released_by: 'alice',
            released_at: at,
          },
        }),
      )
      .thenRows(async (db) => {
        const held = await listQuarantine(db, 'admin', { released: false });
        expect(held.map((r) => [r.todo_id, r.reason])).toEqual([['td_f', 'timeout']]);
        const [released] = await findHeld(db, 'admin', 'td_h');
        expect(released).toMatchObject({
          released_queue: 'inbox',
          released_todo_id: 'td_new',
          released_by: 'alice',
        });
        expect(await listQuarantine(db, 'someone else')).toEqual([]);
      });
  });
});
