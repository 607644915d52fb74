import { describe, expect, it } from 'vitest';
import { START } from '../../src/eventstore/port.ts';
import { comparePositions, formatPosition, parsePosition } from '../../src/eventstore/sql/positions.ts';

describe('SQL event store positions', () => {
  it('formats and parses "<xid8>:<global_position>"', () => {
    expect(formatPosition('742', 12n)).toBe('742:12');
    expect(parsePosition('742:12')).toEqual({ transactionId: 742n, globalPosition: 12n });
    expect(parsePosition(START)).toEqual({ transactionId: 0n, globalPosition: 0n });
  });

  it('orders by transaction first, then global position, numerically', () => {
    expect(comparePositions('9:500', '10:2')).toBeLessThan(0);
    expect(comparePositions('10:3', '10:2')).toBeGreaterThan(0);
    expect(comparePositions('10:2', '10:2')).toBe(0);
    expect(comparePositions(START, '3:1')).toBeLessThan(0);
    expect(comparePositions('3:1', START)).toBeGreaterThan(0);
    expect(comparePositions(START, START)).toBe(0);
    // Beyond 2^53: exact.
    expect(comparePositions('9007199254740993:1', '9007199254740992:1')).toBeGreaterThan(0);
  });

  it('refuses what is not a position, or out of the columns range', () => {
    for (const bad of [
      '',
      '12',
      '1:2:3',
      'a:1',
      '-1:2',
      '1:-2',
      ' 1:2',
      '1:2 ',
      '18446744073709551616:1',
      '1:9223372036854775808',
    ]) {
      expect(() => parsePosition(bad), bad).toThrow(TypeError);
    }
    expect(parsePosition('18446744073709551615:9223372036854775807').globalPosition).toBe(
      9223372036854775807n,
    );
  });
});
