import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { EventData, EventStore, Position, RecordedEvent } from '../../src/eventstore/port.ts';

/**
 * What the conformance suite needs from an adapter's test file. `open()` may be called many times:
 * each call is a separate store instance on the same log (on PostgreSQL with its own pool, as
 * another process would have), closed by `teardown()` unless the test closes it itself.
 */
export interface ConformanceHarness {
  open(): Promise<EventStore>;
  teardown(): Promise<void>;
  /** PostgreSQL only: the test database, for a second connection and for terminating backends. */
  readonly postgres?: {
    readonly url: string;
    /** Terminates every connection to the test database (the stores' pools and listeners). */
    terminateBackends(): Promise<number>;
  };
}

export interface ConformanceTarget {
  readonly name: string;
  readonly kind: EventStore['kind'];
  setup(): Promise<ConformanceHarness>;
}

/** A stream name no other test (or other run against a shared server) uses. */
export const uniqueStream = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

export const bin = (bytes: number[] | Uint8Array, type = 'Bin', metadata?: Uint8Array): EventData => ({
  type,
  data: bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes),
  ...(metadata ? { metadata } : {}),
  contentType: 'application/octet-stream',
});

export const randomPayload = (size: number): Uint8Array => new Uint8Array(randomBytes(size));

export async function toArray<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of iterable) out.push(x);
  return out;
}

/** Byte-for-byte equality with a readable failure. */
export function expectBytes(actual: Uint8Array | null, expected: Uint8Array): void {
  expect(actual).not.toBeNull();
  expect(Buffer.from(actual!).equals(Buffer.from(expected))).toBe(true);
}

export async function waitFor(what: string, condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface Follower {
  readonly seen: RecordedEvent[];
  readonly completed: () => boolean;
  /** Waits until `n` events were seen, then lingers one poll cycle so a repeat would show. */
  until(n: number, timeoutMs?: number): Promise<RecordedEvent[]>;
  stop(): void;
}

/** Subscribes to `$all` after `after` and keeps the events `accept` picks. */
export function follow(store: EventStore, after: Position, accept: (e: RecordedEvent) => boolean): Follower {
  const seen: RecordedEvent[] = [];
  let done = false;
  let failure: unknown;
  const sub = store.subscribeAll({ after }).subscribe({
    next: (e) => {
      if (accept(e)) seen.push(e);
    },
    error: (err) => {
      failure = err;
      done = true;
    },
    complete: () => {
      done = true;
    },
  });
  return {
    seen,
    completed: () => done,
    async until(n, timeoutMs = 20_000) {
      await waitFor(
        `${n} events on the subscription (saw ${seen.length})`,
        () => seen.length >= n || failure !== undefined,
        timeoutMs,
      );
      if (failure) throw failure;
      await new Promise((r) => setTimeout(r, 600));
      return [...seen];
    },
    stop: () => sub.unsubscribe(),
  };
}

/** Positions strictly increasing by the store's own order. */
export function expectAscending(store: EventStore, events: readonly RecordedEvent[]): void {
  for (let i = 1; i < events.length; i++) {
    expect(store.comparePositions(events[i - 1]!.position, events[i]!.position)).toBeLessThan(0);
  }
}

export const ids = (events: readonly RecordedEvent[]): string[] => events.map((e) => e.id);

/** Read lazily: the harness and the store exist only once beforeAll ran. */
export interface SuiteContext {
  readonly harness: ConformanceHarness;
  readonly store: EventStore;
}

/** A settled append: the result, or the error it failed with. */
export async function settle<T>(
  p: Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await p };
  } catch (error) {
    return { ok: false, error };
  }
}

/**
 * Waits until `$all` readers see `position`. An event writer's transaction still running in the
 * same database (another append's batch) holds the visibility horizon back for a moment; readAll
 * is specified to show only what every reader can see, so tests wait for it instead of assuming it.
 */
export async function visible(store: EventStore, position: Position, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (store.comparePositions(await store.headPosition(), position) < 0) {
    if (Date.now() > deadline) throw new Error(`position ${position} never became visible`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
