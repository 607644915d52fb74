import { describe, expect, it } from 'vitest';
import { routeQueueProblem, structuralProblems, toRuleDelivery } from '../../rules-sandbox/index.ts';

const meta = (content_type: string | null) => ({
  provider: 'webhook:wh_1',
  event_type: 'push',
  content_type,
  headers: { 'x-event': 'push' },
  received_at: '2026-01-02T03:04:05.678Z',
});
const bytes = (text: string) => new TextEncoder().encode(text);

describe('toRuleDelivery', () => {
  it('parses JSON bodies, +json types included', () => {
    expect(toRuleDelivery(meta('application/json; charset=utf-8'), bytes('{"a":[1,2]}')).payload).toEqual({
      a: [1, 2],
    });
    expect(toRuleDelivery(meta('application/cloudevents+json'), bytes('"x"')).payload).toBe('x');
  });

  it('parses form bodies, repeated fields as arrays in order', () => {
    const d = toRuleDelivery(
      meta('application/x-www-form-urlencoded'),
      bytes('a=1&b=two+words&a=3&payload=%7B%7D'),
    );
    expect(d.payload).toEqual({ a: ['1', '3'], b: 'two words', payload: '{}' });
  });

  it('gives null for empty, unparseable, non-UTF-8 or other bodies', () => {
    expect(toRuleDelivery(meta('application/json'), new Uint8Array()).payload).toBeNull();
    expect(toRuleDelivery(meta('application/json'), bytes('{nope')).payload).toBeNull();
    expect(toRuleDelivery(meta('application/json'), new Uint8Array([0xff, 0xfe])).payload).toBeNull();
    expect(toRuleDelivery(meta('text/plain'), bytes('hello')).payload).toBeNull();
    expect(toRuleDelivery(meta(null), bytes('{}')).payload).toBeNull();
  });

  it('carries the other fields through', () => {
    expect(toRuleDelivery(meta('application/json'), bytes('{}'))).toEqual({
      event_type: 'push',
      headers: { 'x-event': 'push' },
      payload: {},
      provider: 'webhook:wh_1',
      received_at: '2026-01-02T03:04:05.678Z',
    });
  });
});

describe('rule list limits', () => {
  it('refuses quarantine and names outside the pattern as route queues', () => {
    expect(routeQueueProblem('ci')).toBeNull();
    expect(routeQueueProblem('quarantine')).toMatch(/reserved/);
    expect(routeQueueProblem('-x')).toMatch(/must match/);
  });

  it('caps the number of rules', () => {
    const rules = Array.from({ length: 51 }, (_, i) => ({ id: `r${i}`, source: '() => undefined' }));
    expect(structuralProblems(rules)).toEqual([
      { rule: { id: 'r50', index: 50 }, message: 'a webhook has at most 50 rules' },
    ]);
  });

  it('refuses a NUL character in a rule id or source (the read model cannot store it)', () => {
    const rules = [
      { id: 'ok', source: '() => ({ queue: "\\0" })' },
      { id: 'bad\u0000id', source: '() => undefined' },
      { id: 'src', source: '() => "\u0000"' },
    ];
    expect(structuralProblems(rules)).toEqual([
      {
        rule: { id: 'bad\u0000id', index: 1 },
        message: 'a rule id or source must not contain a NUL character',
      },
      { rule: { id: 'src', index: 2 }, message: 'a rule id or source must not contain a NUL character' },
    ]);
  });
});
