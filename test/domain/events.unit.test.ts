import { describe, expect, it } from 'vitest';
import { AGENT_EVENT_TYPES } from '../../src/domain/agent/events.ts';
import { EventDecodeError } from '../../src/domain/errors.ts';
import {
  decodeAggregateEvent,
  decodeDeliveryMetadata,
  decodeEvent,
  decodeOneOf,
} from '../../src/domain/events.ts';

const bytes = (text: string) => new TextEncoder().encode(text);
const stored = (type: string, data: unknown, streamId = 'agent-ag_1') => ({
  streamId,
  type,
  data: bytes(typeof data === 'string' ? data : JSON.stringify(data)),
});
const registered = {
  agent_id: 'ag_1',
  operator: 'admin',
  name: 'Triage Bot',
  description: null,
  registered_at: '2026-11-22T10:00:00.000Z',
};

/** The error `decode` throws; fails the test when it throws nothing or something else. */
function decodeError(decode: () => unknown): EventDecodeError {
  let thrown: unknown;
  try {
    decode();
  } catch (err) {
    thrown = err;
  }
  expect(thrown, 'the event should be refused').toBeInstanceOf(EventDecodeError);
  return thrown as EventDecodeError;
}

describe('the one event decoder (src/domain/events.ts)', () => {
  it('decodes a known event against its schema, once per stored object, frozen', () => {
    const event = stored('AgentRegistered', registered);
    const decoded = decodeEvent(event);
    expect(decoded).toEqual({ type: 'AgentRegistered', data: registered });
    expect(decodeEvent(event)).toBe(decoded);
    expect(Object.isFrozen(decoded.data)).toBe(true);
  });

  it('an unknown event type is an EventDecodeError naming the stream and the type', () => {
    const error = decodeError(() => decodeEvent(stored('AgentTeleported', registered)));
    expect(error.streamId).toBe('agent-ag_1');
    expect(error.eventType).toBe('AgentTeleported');
    expect(error.message).toBe(
      'event AgentTeleported on stream agent-ag_1: no aggregate knows this event type',
    );
  });

  it('data that is not JSON, or not UTF-8, is an EventDecodeError saying so', () => {
    expect(decodeError(() => decodeEvent(stored('AgentRegistered', '{"agent_id":'))).message).toBe(
      'event AgentRegistered on stream agent-ag_1: its data is not JSON',
    );
    const latin1 = {
      streamId: 'agent-ag_1',
      type: 'AgentRegistered',
      data: new Uint8Array([0x7b, 0xff, 0x7d]),
    };
    expect(decodeError(() => decodeEvent(latin1)).message).toMatch(/its data is not JSON$/);
  });

  it('data that fails its schema is an EventDecodeError naming the field and the problem', () => {
    const { name: _name, ...withoutName } = registered;
    expect(decodeError(() => decodeEvent(stored('AgentRegistered', withoutName))).message).toMatch(
      /^event AgentRegistered on stream agent-ag_1: malformed data at name: /,
    );
    const wrongType = decodeError(() =>
      decodeEvent(stored('AgentRegistered', { ...registered, description: 7 })),
    );
    expect(wrongType.message).toMatch(/malformed data at description: .*string/i);
  });

  it('a valid event on a stream it does not belong to is an EventDecodeError', () => {
    const nameOnAgent = stored('AgentNameReserved', { agent_id: 'ag_1', operator: 'admin', name: 'bot' });
    const misplaced =
      'event AgentNameReserved on stream agent-ag_1: this event type does not belong on this stream';
    expect(decodeError(() => decodeOneOf(nameOnAgent, AGENT_EVENT_TYPES)).message).toBe(misplaced);
    expect(decodeError(() => decodeAggregateEvent(nameOnAgent, AGENT_EVENT_TYPES)).message).toBe(misplaced);
  });

  it('a delivery whose metadata is missing or malformed is an EventDecodeError', () => {
    const delivery = (metadata: Uint8Array | null) => ({
      streamId: 'deliveries',
      type: 'DeliveryReceived',
      metadata,
    });
    expect(decodeError(() => decodeDeliveryMetadata(delivery(null))).message).toBe(
      'event DeliveryReceived on stream deliveries: its metadata is not JSON',
    );
    expect(decodeError(() => decodeDeliveryMetadata(delivery(bytes('{"provider":1}')))).message).toMatch(
      /^event DeliveryReceived on stream deliveries: malformed metadata at /,
    );
  });
});
