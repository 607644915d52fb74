import { describe, expect, it } from 'vitest';
import { jsonEvent } from '../../src/eventstore/codec.ts';
import { createEventStoreDbStore } from '../../src/eventstore/eventstoredb.ts';
import { type EventStore, StoreUnavailableError } from '../../src/eventstore/port.ts';
import { describeEventStoreConformance } from './conformance.ts';

/**
 * EventStoreDB cannot run on this machine; the conformance suite runs against a server only when
 * HOOKLINE_TEST_EVENTSTORE_URL names one (e.g. `esdb://127.0.0.1:2113?tls=false` from
 * docker-compose.yml), and says so plainly when it does not.
 */
const url = process.env.HOOKLINE_TEST_EVENTSTORE_URL;

if (url) {
  describeEventStoreConformance({
    name: 'EventStoreDB',
    kind: 'eventstoredb',
    async setup() {
      const stores: EventStore[] = [];
      return {
        async open() {
          const store = await createEventStoreDbStore(url);
          stores.push(store);
          return store;
        },
        async teardown() {
          for (const s of stores) await s.close();
        },
      };
    },
  });
} else {
  console.warn(
    '[skip] EventStoreDB conformance suite SKIPPED: HOOKLINE_TEST_EVENTSTORE_URL is not set (e.g. esdb://127.0.0.1:2113?tls=false)',
  );
  describe.skip('event store conformance: EventStoreDB (skipped: HOOKLINE_TEST_EVENTSTORE_URL is not set)', () => {
    it('needs an EventStoreDB server', () => {});
  });
}

describe('EventStoreDB adapter without a server', () => {
  it('turns a refused connection into StoreUnavailableError and completes subscriptions on close', async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const store = await createEventStoreDbStore('esdb://127.0.0.1:1?tls=false');
    await expect(store.append('s', [jsonEvent('A', {})])).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(store.headPosition()).rejects.toBeInstanceOf(StoreUnavailableError);
    let completed = false;
    store.subscribeAll().subscribe({ complete: () => (completed = true) });
    await store.close();
    expect(completed).toBe(true);
    await expect(store.append('s', [jsonEvent('A', {})])).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('orders its "<commit>:<prepare>" positions numerically, START first', async () => {
    const store = await createEventStoreDbStore('kurrentdb://127.0.0.1:1?tls=false');
    try {
      expect(store.comparePositions('start', '0:0')).toBeLessThan(0);
      expect(store.comparePositions('9:9', '10:2')).toBeLessThan(0);
      expect(store.comparePositions('10:3', '10:2')).toBeGreaterThan(0);
      expect(store.comparePositions('10:2', '10:2')).toBe(0);
      expect(() => store.comparePositions('10', '10:2')).toThrow(TypeError);
    } finally {
      await store.close();
    }
  });
});
