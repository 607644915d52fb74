import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createSseWriter, serializeBatch, sseFrame } from '../../src/live/sse.ts';
import type { LiveDelivery } from '../../src/live/summary.ts';

/** A socket whose reader never reads: every write after the first stays buffered. */
function stalledSink() {
  let destroyed = false;
  const sink = new Writable({
    highWaterMark: 16,
    write: () => {
      // never calls back: the peer stopped reading
    },
  });
  return {
    sink: Object.assign(sink, {
      destroy: () => {
        destroyed = true;
        return sink;
      },
    }),
    isDestroyed: () => destroyed,
  };
}

const delivery = (n: number): LiveDelivery => ({
  position: `1:${n}`,
  summary: {
    id: n,
    provider: 'codehost',
    event_type: 'push',
    trust_mode: 'signed',
    verified: true,
    payload_size: 10,
    received_at: '2026-01-01T00:00:00.000Z',
  },
});

describe('SSE frames', () => {
  it('writes id, event and one data line', () => {
    expect(sseFrame('status', { a: 'x\ny' }, '5:6')).toBe('id: 5:6\nevent: status\ndata: {"a":"x\\ny"}\n\n');
    expect(sseFrame('status', { a: 1 })).toBe('event: status\ndata: {"a":1}\n\n');
  });

  it('serializes a batch once, each frame carrying its position as id', () => {
    const batch = serializeBatch([delivery(1), delivery(2)]);
    expect(batch.items.map((i) => i.position)).toEqual(['1:1', '1:2']);
    expect(Buffer.from(batch.joined).toString()).toBe(batch.items[0]!.frame + batch.items[1]!.frame);
    expect(batch.items[1]!.frame.startsWith('id: 1:2\nevent: event-received\ndata: {"id":2,')).toBe(true);
  });
});

describe('slow-client policy', () => {
  it('drops a client whose unsent bytes pass the bound, once', () => {
    const { sink, isDestroyed } = stalledSink();
    let drops = 0;
    const writer = createSseWriter(sink, 1000, () => drops++);
    const frame = sseFrame('event-received', { pad: 'x'.repeat(200) }, '1:1');
    let sent = 0;
    while (writer.send(frame)) sent++;
    expect(sent).toBeGreaterThan(0);
    expect(sent * frame.length).toBeLessThanOrEqual(1000 + frame.length);
    expect(isDestroyed()).toBe(true);
    expect(drops).toBe(1);
    expect(writer.closed).toBe(true);
    expect(writer.send(frame)).toBe(false);
    expect(drops).toBe(1);
  });

  it('writes a catch-up whole, and bounds what comes after it on top of what it left unsent', () => {
    const { sink, isDestroyed } = stalledSink();
    let drops = 0;
    const writer = createSseWriter(sink, 1000, () => drops++);
    const frame = sseFrame('event-received', { pad: 'x'.repeat(200) }, '1:1');
    // A replay of 5,000 bytes, five times the bound: the reconnecting client is not dropped for it.
    expect(writer.sendCatchUp(frame.repeat(Math.ceil(5000 / frame.length)))).toBe(true);
    expect(isDestroyed()).toBe(false);
    let sent = 0;
    while (writer.send(frame)) sent++;
    // Then the usual bound, on top of the unsent replay: about 1,000 more bytes.
    expect(sent).toBeGreaterThan(0);
    expect(sent * frame.length).toBeLessThanOrEqual(1000 + frame.length);
    expect(drops).toBe(1);
  });

  it('keeps a client that keeps up', () => {
    const chunks: string[] = [];
    const sink = new Writable({
      write: (chunk, _enc, done) => {
        chunks.push(String(chunk));
        done();
      },
    });
    const writer = createSseWriter(sink, 100, () => {
      throw new Error('must not drop');
    });
    for (let i = 0; i < 50; i++) expect(writer.send(sseFrame('status', { i }))).toBe(true);
    expect(chunks).toHaveLength(50);
  });
});
