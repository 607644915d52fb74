import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqlDatabase } from '../../src/db/open.ts';
import { jsonEvent } from '../../src/eventstore/codec.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import { createSqlEventStore } from '../../src/eventstore/sql/store.ts';
import { openEmbeddedTarget } from '../support/embedded.ts';

// Regression: pages ordered by the text alias of `revision` returned '1000' before '2' and lost
// events of streams longer than one page.
describe('readStream over a stream longer than one page', () => {
  let sqlDb: SqlDatabase;
  let store: EventStore;
  const total = 2500;

  beforeAll(async () => {
    sqlDb = await openEmbeddedTarget();
    store = await createSqlEventStore(sqlDb);
    const events = Array.from({ length: total }, (_, i) => jsonEvent('Numbered', { i }));
    for (let i = 0; i < total; i += 500) await store.append('long', events.slice(i, i + 500));
  });

  afterAll(async () => {
    await store.close();
    await sqlDb.close();
  });

  it('returns every revision in order, forwards and backwards', async () => {
    const forwards: bigint[] = [];
    for await (const e of store.readStream('long')) forwards.push(e.revision);
    expect(forwards).toEqual(Array.from({ length: total }, (_, i) => BigInt(i)));

    const backwards: bigint[] = [];
    for await (const e of store.readStream('long', { direction: 'backwards' })) backwards.push(e.revision);
    expect(backwards).toEqual(Array.from({ length: total }, (_, i) => BigInt(total - 1 - i)));
  });

  it('honours fromRevision and maxCount across the page boundary', async () => {
    const got: bigint[] = [];
    for await (const e of store.readStream('long', { fromRevision: 995n, maxCount: 10 }))
      got.push(e.revision);
    expect(got).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(995 + i)));
  });
});
