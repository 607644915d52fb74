import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import type { SqlDatabase } from '../../src/db/open.ts';
import { DELIVERIES_STREAM } from '../../src/domain/delivery/events.ts';
import type { EventStore, RecordedEvent } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { createDeliveryRecorder, type DeliveryInput, reservationStream } from '../../src/ingest/recorder.ts';
import { openEmbeddedTarget } from '../support/embedded.ts';

async function readAll(store: EventStore, stream: string): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for await (const e of store.readStream(stream)) out.push(e);
  return out;
}

const input = (externalId: string): DeliveryInput => ({
  provider: 'codehost',
  family: 'webhook',
  trust_mode: 'signed',
  verified: true,
  verify_detail: 'signature ok',
  event_type: 'push',
  external_id: externalId,
  content_type: 'application/json',
  source_ip: '127.0.0.1',
  headers: {},
  payload: new TextEncoder().encode('{"a":1}'),
});

/**
 * The recorder on both paths of the store port: with appendAtomic (the SQL adapters: reservation
 * and delivery in one transaction) and without it (what the EventStoreDB adapter offers: the
 * reservation, then the delivery). The same store serves both; the second view of it simply
 * lacks the optional method.
 */
describe('delivery recorder, atomic and sequential reservation', () => {
  let sql: SqlDatabase;
  let store: EventStore;

  beforeAll(async () => {
    sql = await openEmbeddedTarget();
    store = await createSqlEventStore(sql);
  });
  afterAll(async () => {
    await store?.close();
    await sql?.close();
  });

  for (const path of ['atomic', 'sequential'] as const) {
    it(`${path}: 20 simultaneous copies of one external id are stored once, all answered with its id`, async () => {
      const view: EventStore = path === 'atomic' ? store : { ...store, appendAtomic: undefined };
      expect(typeof view.appendAtomic).toBe(path === 'atomic' ? 'function' : 'undefined');
      const recorder = createDeliveryRecorder({ store: view, clock: systemClock });
      const externalId = randomUUID();
      const before = (await store.streamInfo(DELIVERIES_STREAM)).revision;
      const results = await Promise.all(Array.from({ length: 20 }, () => recorder.record(input(externalId))));
      expect(new Set(results.map((r) => r.ack.id)).size).toBe(1);
      expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
      expect((await store.streamInfo(DELIVERIES_STREAM)).revision).toBe(before + 1n);
      const reservation = await readAll(store, reservationStream('codehost', externalId));
      expect(reservation.map((e) => e.type)).toEqual(['DeliveryReserved']);
      const [delivery] = await readAll(store, DELIVERIES_STREAM).then((all) => all.slice(-1));
      expect(JSON.parse(new TextDecoder().decode(reservation[0]!.data))).toMatchObject({
        event_uuid: delivery!.id,
      });
      // Atomic: one transaction, so both positions carry the same transaction id.
      const sameTransaction = reservation[0]!.position.split(':')[0] === delivery!.position.split(':')[0];
      expect(sameTransaction).toBe(path === 'atomic');
    });
  }
});
