import { randomUUID } from 'node:crypto';

/**
 * A UUIDv7 (RFC 9562): the 48-bit Unix millisecond time first, then random bits. Delivery event
 * ids are indexed (`log_events.event_uuid`); time-ordered ids append to the right edge of that
 * index instead of dirtying a random page per insert.
 * Built from randomUUID (its entropy is cached) with the time and the version nibble written over.
 */
export function uuidv7(now: number = Date.now()): string {
  const r = randomUUID(); // xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx
  const t = now.toString(16).padStart(12, '0').slice(-12);
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${r.slice(15)}`;
}
