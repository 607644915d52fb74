import type { DeliveryMetadata } from '../../../src/domain/delivery/events.ts';
import { createDeliveryRecorder } from '../../../src/ingest/recorder.ts';
import type { Runtime } from '../../../src/runtime.ts';

export type SeedDelivery = Partial<Omit<DeliveryMetadata, 'received_at' | 'payload_size'>> & {
  payload?: Uint8Array | string;
  received_at?: Date;
};

/**
 * Records deliveries through the ingestion recorder (the path every receiver uses) and waits until
 * the read models have them. Returns the event ids.
 */
export async function seedDeliveries(
  runtime: Pick<Runtime, 'store' | 'clock' | 'projections'>,
  deliveries: readonly SeedDelivery[],
): Promise<number[]> {
  const recorder = createDeliveryRecorder({ store: runtime.store, clock: runtime.clock });
  const ids: number[] = [];
  let last: string | null = null;
  for (const d of deliveries) {
    const payload = d.payload ?? '{"ok":true}';
    const recorded = await recorder.record({
      provider: d.provider ?? 'codehost',
      family: d.family ?? 'webhook',
      trust_mode: d.trust_mode ?? 'signed',
      verified: d.verified ?? true,
      verify_detail: d.verify_detail ?? 'sha256 signature verified',
      event_type: d.event_type === undefined ? 'push' : d.event_type,
      external_id: d.external_id ?? null,
      content_type: d.content_type ?? 'application/json',
      source_ip: d.source_ip ?? '127.0.0.1',
      headers: d.headers ?? { 'content-type': 'application/json' },
      payload: typeof payload === 'string' ? new TextEncoder().encode(payload) : payload,
      ...(d.received_at ? { received_at: d.received_at } : {}),
    });
    ids.push(recorded.ack.id);
    last = recorded.position ?? last;
  }
  if (last) await runtime.projections.waitFor(last, { timeoutMs: 10_000 });
  return ids;
}
