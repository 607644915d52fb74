import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import type { SqlDatabase } from '../../src/db/open.ts';
import { DELIVERIES_STREAM } from '../../src/domain/delivery/events.ts';
import { DuplicateKeyError, type EventStore, type RecordedEvent } from '../../src/eventstore/port.ts';
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
 * The recorder on the three paths of the store port: with unique keys (the SQL adapters: the
 * delivery event carries the key, no reservation stream), with appendAtomic alone (reservation and
 * delivery in one transaction) and with neither (what the EventStoreDB adapter offers: the
 * reservation, then the delivery). The same store serves all three; the other views of it simply
 * lack the optional capabilities.
 */
describe('delivery recorder, unique key, atomic and sequential reservation', () => {
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

  const viewOf = (path: 'keyed' | 'atomic' | 'sequential'): EventStore =>
    path === 'keyed'
      ? store
      : path === 'atomic'
        ? { ...store, uniqueKeys: false }
        : { ...store, uniqueKeys: false, appendAtomic: undefined };

  for (const path of ['keyed', 'atomic', 'sequential'] as const) {
    it(`${path}: 20 simultaneous copies of one external id are stored once, all answered with its id`, async () => {
      const view = viewOf(path);
      expect(typeof view.appendAtomic).toBe(path === 'sequential' ? 'undefined' : 'function');
      const recorder = createDeliveryRecorder({ store: view, clock: systemClock });
      const externalId = randomUUID();
      const before = (await store.streamInfo(DELIVERIES_STREAM)).revision;
      const results = await Promise.all(Array.from({ length: 20 }, () => recorder.record(input(externalId))));
      expect(new Set(results.map((r) => r.ack.id)).size).toBe(1);
      expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
      expect((await store.streamInfo(DELIVERIES_STREAM)).revision).toBe(before + 1n);
      const [delivery] = await readAll(store, DELIVERIES_STREAM).then((all) => all.slice(-1));
      expect(results[0]!.ack.id).toBe(Number(delivery!.revision) + 1);
      if (path === 'keyed') {
        // No stream per delivery: the key is the event's own.
        expect((await store.streamInfo(reservationStream('codehost', externalId))).revision).toBe(-1n);
        return;
      }
      const reservation = await readAll(store, reservationStream('codehost', externalId));
      expect(reservation.map((e) => e.type)).toEqual(['DeliveryReserved']);
      expect(JSON.parse(new TextDecoder().decode(reservation[0]!.data))).toMatchObject({
        event_uuid: delivery!.id,
      });
      // Atomic: one transaction, so both positions carry the same transaction id.
      const sameTransaction = reservation[0]!.position.split(':')[0] === delivery!.position.split(':')[0];
      expect(sameTransaction).toBe(path === 'atomic');
    });
  }

  it('keyed: a delivery recorded with a reservation stream before the upgrade still answers its copies', async () => {
    const externalId = randomUUID();
    const old = await createDeliveryRecorder({ store: viewOf('atomic'), clock: systemClock }).record(
      input(externalId),
    );
    const keyed = createDeliveryRecorder({ store, clock: systemClock });
    const before = (await store.streamInfo(DELIVERIES_STREAM)).revision;
    const copies = await Promise.all(Array.from({ length: 5 }, () => keyed.record(input(externalId))));
    expect(copies.map((c) => [c.duplicate, c.ack.id])).toEqual(Array(5).fill([true, old.ack.id]));
    expect((await store.streamInfo(DELIVERIES_STREAM)).revision).toBe(before);
    // Only the reservation of before: the keyed recorder wrote nothing to it.
    expect((await store.streamInfo(reservationStream('codehost', externalId))).revision).toBe(0n);
  });

  it('the store refuses a held key with DuplicateKeyError naming the holder, in a batch and across batches', async () => {
    const key = `k-${randomUUID()}`;
    const event = () => ({ type: 'Keyed', data: new Uint8Array([1]), uniqueKey: key });
    const stream = `keyed-${randomUUID()}`;
    const other = `keyed-${randomUUID()}`;
    const settled = await Promise.allSettled([
      store.append(stream, [event()]),
      store.append(other, [event()]),
      store.append(stream, [event()]),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    for (const s of settled.slice(1)) {
      const err = (s as PromiseRejectedResult).reason;
      expect(err).toBeInstanceOf(DuplicateKeyError);
      expect(err.holder).toEqual({ streamId: stream, revision: 0n });
    }
    await expect(store.append(other, [event()])).rejects.toBeInstanceOf(DuplicateKeyError);
    expect((await store.streamInfo(other)).revision).toBe(-1n);
    // Retention frees the key with its event.
    await store.truncateStream(stream, 1n);
    await expect(store.append(other, [event()])).resolves.toMatchObject({ nextExpectedRevision: 0n });
  });
});
