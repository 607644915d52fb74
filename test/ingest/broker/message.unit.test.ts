import { describe, expect, it } from 'vitest';
import { combineStates } from '../../../src/ingest/broker/index.ts';
import { brokerProviderName, fieldMap, toBrokerDelivery } from '../../../src/ingest/broker/message.ts';

const at = new Date('2026-11-22T10:00:00.123Z');
const fields = (...pairs: Array<string | Buffer>) =>
  pairs.map((p) => (typeof p === 'string' ? Buffer.from(p) : p));

describe('toBrokerDelivery', () => {
  it('maps the documented fields onto a queue delivery', () => {
    const d = toBrokerDelivery(
      'orders',
      '1700000000000-0',
      fields(
        'payload',
        '{"a":1}',
        'content_type',
        'application/json; charset=utf-8',
        'event_type',
        'order.created',
        'delivery_id',
        'd-42',
      ),
      at,
    );
    expect(d).toMatchObject({
      provider: 'broker:orders',
      family: 'queue',
      trust_mode: 'queue',
      verified: false,
      verify_detail: 'orders',
      event_type: 'order.created',
      external_id: 'd-42',
      content_type: 'application/json; charset=utf-8',
      source_ip: null,
      received_at: at,
    });
    expect(Buffer.from(d.payload).toString()).toBe('{"a":1}');
  });

  it('defaults: application/json, no event type, the entry id as external id', () => {
    const d = toBrokerDelivery('c', '5-1', fields('payload', 'x'), at);
    expect(d.content_type).toBe('application/json');
    expect(d.event_type).toBeNull();
    expect(d.external_id).toBe('5-1');
    expect(d.headers).toEqual({ 'x-broker-entry-id': '5-1' });
  });

  it('keeps non-UTF-8 payload bytes exactly', () => {
    const raw = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0xc3, 0x28, 0x0a]);
    const d = toBrokerDelivery('c', '1-0', fields('payload', raw), at);
    expect(Buffer.from(d.payload).equals(raw)).toBe(true);
  });

  it('an entry without payload records an empty body; blank text fields fall back to defaults', () => {
    const d = toBrokerDelivery('c', '1-0', fields('delivery_id', '  ', 'event_type', '\u0001'), at);
    expect(d.payload.byteLength).toBe(0);
    expect(d.external_id).toBe('1-0');
    expect(d.event_type).toBeNull();
  });

  it('strips control characters and bounds the text fields', () => {
    const d = toBrokerDelivery('c', '1-0', fields('event_type', `a\r\nb${'x'.repeat(500)}`), at);
    expect(d.event_type?.startsWith('ab')).toBe(true);
    expect(d.event_type).toHaveLength(200);
  });

  it('the first occurrence of a repeated field wins', () => {
    expect(
      fieldMap(fields('payload', 'one', 'payload', 'two'))
        .get('payload')
        ?.toString(),
    ).toBe('one');
  });

  it('copies the body out of the reply buffer', () => {
    const reply = Buffer.from('payload-bytes');
    const d = toBrokerDelivery('c', '1-0', [Buffer.from('payload'), reply], at);
    reply.fill(0);
    expect(Buffer.from(d.payload).toString()).toBe('payload-bytes');
  });
});

describe('broker names and health', () => {
  it('names the provider broker:<channel>', () => {
    expect(brokerProviderName('a.b')).toBe('broker:a.b');
  });

  it('combines channel states: error wins, then all disabled, else ok', () => {
    expect(combineStates(['ok', 'disabled'])).toBe('ok');
    expect(combineStates(['disabled', 'disabled'])).toBe('disabled');
    expect(combineStates(['ok', 'error', 'disabled'])).toBe('error');
  });
});
