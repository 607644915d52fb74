import { describe, expect, it } from 'vitest';
import { reservationStream } from '../../src/ingest/recorder.ts';

describe('external id reservation streams', () => {
  it('keys reservations by provider and a hash of the external id', () => {
    expect(reservationStream('codehost', 'abc')).toBe(reservationStream('codehost', 'abc'));
    expect(reservationStream('codehost', 'abc')).not.toBe(reservationStream('payments', 'abc'));
    expect(reservationStream('codehost', 'abc')).not.toContain('abc');
  });
});
