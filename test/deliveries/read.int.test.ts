import { describe, expect, it } from 'vitest';
import { getLoggedDelivery } from '../../projections/log.queries.ts';
import {
  deliveryDetail,
  deliveryToReplay,
  readDeliveryEvent,
  recentWebhookDeliveriesWithBytes,
} from '../../src/deliveries/read.ts';
import { DELIVERIES_STREAM } from '../../src/domain/delivery/events.ts';
import { newId } from '../../src/ids.ts';
import { createDeliveryRecorder, type DeliveryInput } from '../../src/ingest/recorder.ts';
import { useTestRuntime, vendTestEndpoint } from '../support/runtime.ts';
import { postgresAvailable } from '../support/services.ts';

const hasPg = await postgresAvailable();

/** Not UTF-8: a lone continuation byte, 0xff and 0xfe, a NUL, and a truncated sequence at the end. */
const BINARY = Uint8Array.from([0x7b, 0x80, 0xff, 0xfe, 0x00, 0x41, 0xc3, 0x28, 0xe2, 0x82]);
/** Header values as a sanitized request may carry them: non-ASCII text, and a NUL from a broker entry. */
const HEADERS = { 'content-type': 'application/octet-stream', 'x-note': 'café ✓', 'x-nul': 'a\u0000b' };

/**
 * A delivery's summary is the log read model's row; its headers and bytes are in its event on the
 * `deliveries` stream. These read the two together, and a delivery whose event retention removed
 * is gone even while its row is still there.
 */
describe.runIf(hasPg)('reading a delivery back (PostgreSQL)', () => {
  const suite = useTestRuntime('hookline_deliveries_read');

  const record = async (over: Partial<DeliveryInput>) => {
    const { store, clock, projections } = suite.runtime;
    const recorded = await createDeliveryRecorder({ store, clock }).record({
      provider: 'codehost',
      family: 'webhook',
      trust_mode: 'signed',
      verified: true,
      verify_detail: 'signature ok',
      event_type: 'push',
      external_id: null,
      content_type: 'application/octet-stream',
      source_ip: '203.0.113.7',
      headers: HEADERS,
      payload: BINARY,
      ...over,
    });
    await projections.waitFor(recorded.position!, { projection: 'log', timeoutMs: 10_000 });
    return recorded.ack.id;
  };
  const webhookDelivery = (webhookId: string, endpointId: string, payload: Uint8Array) =>
    record({
      provider: `webhook:${webhookId}`,
      trust_mode: 'token',
      verified: false,
      verify_detail: 'token ok',
      payload,
      route: { endpoint_id: endpointId, queue: 'inbox' },
    });
  const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));

  it('deliveryDetail: the row, the headers and the bytes byte for byte, non-UTF-8 included', async () => {
    const id = await record({});
    const detail = await deliveryDetail(suite.runtime, id);
    expect(detail).toMatchObject({
      id,
      provider: 'codehost',
      event_type: 'push',
      trust_mode: 'signed',
      verified: true,
      verify_detail: 'signature ok',
      content_type: 'application/octet-stream',
      source_ip: '203.0.113.7',
      payload_size: BINARY.byteLength,
    });
    expect(same(detail!.payload_bytes, BINARY)).toBe(true);
    // The text form is lossy (U+FFFD for the bad bytes); the bytes are not.
    expect(detail!.payload).toBe(new TextDecoder().decode(BINARY));
    // A NUL in a header value shows as U+FFFD, as the read model used to store it.
    expect(detail!.headers).toEqual({ ...HEADERS, 'x-nul': 'a\uFFFDb' });
    // The id as the API and the screens give it.
    expect((await deliveryDetail(suite.runtime, String(id)))?.id).toBe(id);
    expect((await deliveryDetail(suite.runtime, BigInt(id)))?.id).toBe(id);
  });

  it('a UTF-8 payload reads back as the same text', async () => {
    const text = '{"msg":"grüße ✓ 😀"}';
    const id = await record({ payload: new TextEncoder().encode(text), content_type: 'application/json' });
    const detail = await deliveryDetail(suite.runtime, id);
    expect(detail?.payload).toBe(text);
    expect(detail?.payload_size).toBe(new TextEncoder().encode(text).byteLength);
  });

  it('no delivery: an unknown id, 0, a negative or a malformed one', async () => {
    for (const id of [999_999, 0, '-1', 'abc', '1.5', '']) {
      expect(await deliveryDetail(suite.runtime, id)).toBeUndefined();
    }
    expect(await readDeliveryEvent(suite.runtime.store, 0)).toBeUndefined();
    expect(await readDeliveryEvent(suite.runtime.store, -3n)).toBeUndefined();
    expect(await deliveryToReplay(suite.runtime, 999_999)).toBeUndefined();
  });

  it("the scope: an instance receiver's delivery is everyone's, an endpoint webhook's only its endpoint's and owner's", async () => {
    const ep = await vendTestEndpoint(suite.runtime, 'scoped');
    await suite.runtime.projections.waitFor(ep.position, { projection: 'endpoints', timeoutMs: 10_000 });
    const instance = await record({});
    const own = await webhookDelivery(ep.webhookId, ep.endpointId, BINARY);
    const other = { endpointId: newId('ep') };

    expect((await deliveryDetail(suite.runtime, instance, other))?.id).toBe(instance);
    expect(await deliveryDetail(suite.runtime, own, other)).toBeUndefined();
    expect((await deliveryDetail(suite.runtime, own, { endpointId: ep.endpointId }))?.id).toBe(own);
    expect((await deliveryDetail(suite.runtime, own, { operator: 'alice' }))?.id).toBe(own);
    expect(await deliveryDetail(suite.runtime, own, { operator: 'bob' })).toBeUndefined();
    expect((await deliveryDetail(suite.runtime, own))?.id).toBe(own); // the screens: no scope
  });

  it('deliveryToReplay: whose it was, its content type and its exact bytes', async () => {
    const webhookId = newId('wh');
    const id = await webhookDelivery(webhookId, newId('ep'), BINARY);
    const replay = await deliveryToReplay(suite.runtime, id);
    expect(replay).toMatchObject({
      id,
      provider: `webhook:${webhookId}`,
      content_type: 'application/octet-stream',
    });
    expect(same(replay!.payload, BINARY)).toBe(true);
  });

  it("recentWebhookDeliveriesWithBytes: a webhook's own, newest first, headers as recorded and exact bytes", async () => {
    const webhookId = newId('wh');
    const endpointId = newId('ep');
    const first = await webhookDelivery(webhookId, endpointId, Uint8Array.from([1, 2, 3]));
    const second = await webhookDelivery(webhookId, endpointId, BINARY);
    await webhookDelivery(newId('wh'), endpointId, BINARY); // another webhook's

    const recent = await recentWebhookDeliveriesWithBytes(suite.runtime, webhookId, { limit: 10 });
    expect(recent.map((r) => r.id)).toEqual([second, first]);
    expect(same(recent[0]!.payload, BINARY)).toBe(true);
    expect(same(recent[1]!.payload, Uint8Array.from([1, 2, 3]))).toBe(true);
    // What the rules see: the headers as recorded, the NUL included.
    expect(recent[0]!.headers).toEqual(HEADERS);
    expect(recent[0]).toMatchObject({ provider: `webhook:${webhookId}`, event_type: 'push' });

    expect(
      (await recentWebhookDeliveriesWithBytes(suite.runtime, webhookId, { limit: 1 })).map((r) => r.id),
    ).toEqual([second]);
    expect(
      (await recentWebhookDeliveriesWithBytes(suite.runtime, webhookId, { eventId: first, limit: 10 })).map(
        (r) => r.id,
      ),
    ).toEqual([first]);
  });

  // Last: it truncates the shared `deliveries` stream.
  it('a delivery whose event was truncated away reads as gone, though its row is still there', async () => {
    const { store, db } = suite.runtime;
    const webhookId = newId('wh');
    const endpointId = newId('ep');
    const pruned = await webhookDelivery(webhookId, endpointId, BINARY);
    const kept = await webhookDelivery(webhookId, endpointId, Uint8Array.from([9]));

    // As retention's first step: the stream loses every event below the first one kept.
    await store.truncateStream(DELIVERIES_STREAM, BigInt(kept) - 1n);
    expect(await getLoggedDelivery(db, pruned)).toBeDefined();

    expect(await readDeliveryEvent(store, pruned)).toBeUndefined();
    expect(await deliveryDetail(suite.runtime, pruned)).toBeUndefined();
    expect(await deliveryToReplay(suite.runtime, pruned)).toBeUndefined();
    const recent = await recentWebhookDeliveriesWithBytes(suite.runtime, webhookId, { limit: 10 });
    expect(recent.map((r) => r.id)).toEqual([kept]);

    expect((await readDeliveryEvent(store, kept))?.revision).toBe(BigInt(kept) - 1n);
    expect(same((await deliveryDetail(suite.runtime, kept))!.payload_bytes, Uint8Array.from([9]))).toBe(true);
  });
});
