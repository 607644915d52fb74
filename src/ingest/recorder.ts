import type { Clock } from '../clock.ts';
import { type Aggregate, readAggregate } from '../commands/handle-command.ts';
import { decideOnDuplicate, reserveDelivery } from '../domain/delivery/decide.ts';
import {
  DELIVERIES_STREAM,
  DELIVERY_RECEIVED,
  type DeliveryMetadata,
  eventIdFromRevision,
  type IngestAck,
  type ReservationEvent,
} from '../domain/delivery/events.ts';
import { type ReservationState, reservationFolder } from '../domain/delivery/state.ts';
import { decodeDeliveryMetadata } from '../domain/events.ts';
import { HooklineError } from '../errors.ts';
import { encodeEvent } from '../eventstore/codec.ts';
import {
  type AppendResult,
  DuplicateKeyError,
  type EventStore,
  EventTooLargeError,
  type ExpectedRevision,
  isWrongExpectedVersion,
  type StreamAppend,
  StreamNotFoundError,
} from '../eventstore/port.ts';
import { sha256Hex } from '../ids.ts';
import { uuidv7 } from './uuid7.ts';

export type DeliveryInput = Omit<DeliveryMetadata, 'received_at' | 'payload_size'> & {
  /** The raw body, stored byte for byte. */
  readonly payload: Uint8Array;
  /** Defaults to the clock's now. */
  readonly received_at?: Date;
};

export interface RecordedDelivery {
  readonly ack: IngestAck;
  /** True when the external id was already held: nothing was appended and `ack` is the original's. */
  readonly duplicate: boolean;
  /** Position of the appended event (null for a duplicate). */
  readonly position: string | null;
  /** What the appends of `also` returned, in their order (empty for a duplicate). */
  readonly also: readonly AppendResult[];
}

export interface DeliveryRecorder {
  /**
   * Durable before it resolves. Throws HooklineError 503 when the log cannot be written, 413 when
   * too large. `also`: appends written in the same transaction as the delivery (its hand-off,
   * src/todos/hand-off.ts), whose events may stamp the delivery's revision; only a store with
   * appendAtomic takes them. Nothing of them is written for a duplicate.
   */
  record(input: DeliveryInput, also?: readonly StreamAppend[]): Promise<RecordedDelivery>;
}

/** The original of a duplicate, found by the UUID its delivery event carries. */
export type FindDelivery = (eventUuid: string) => Promise<IngestAck | undefined>;

export interface RecorderDeps {
  readonly store: EventStore;
  readonly clock: Clock;
  /** Look-up in a read model (the log projection's `findDeliveryByUuid`); the stream tail is searched too. */
  readonly findInReadModel?: FindDelivery;
  /** A reservation whose delivery cannot be found is taken over after this long (default 30 s). */
  readonly graceMs?: number;
  /** How long a duplicate waits for an in-flight original before answering 503 (default 5 s). */
  readonly duplicateWaitMs?: number;
  /** How many of the newest deliveries the tail search reads (default 256). */
  readonly tailSearch?: number;
}

const encoder = new TextEncoder();

/**
 * The external id is hashed: any characters give a short stream id. On a store with unique keys
 * (PostgreSQL) the same string is the delivery event's unique key, and no such stream is written;
 * a stream of that name from before holds the key as it did (migrations/20261125020400_…).
 */
export const reservationStream = (provider: string, externalId: string): string =>
  `dedup-${provider}-${sha256Hex(externalId)}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A taken reservation or key stays itself (the caller follows it); the rest is storageError. */
const appendError = (e: unknown): Error =>
  isWrongExpectedVersion(e) || e instanceof DuplicateKeyError ? e : storageError(e);

function storageError(e: unknown): HooklineError {
  if (e instanceof HooklineError) return e;
  if (e instanceof EventTooLargeError) {
    return new HooklineError(
      'payload_too_large',
      'the body is larger than the event store accepts',
      {},
      { cause: e },
    );
  }
  return new HooklineError(
    'storage_unavailable',
    'the event log cannot be written right now; retry later',
    {},
    {
      cause: e,
    },
  );
}

export function createDeliveryRecorder(deps: RecorderDeps): DeliveryRecorder {
  const { store, clock } = deps;
  const graceMs = deps.graceMs ?? 30_000;
  const duplicateWaitMs = deps.duplicateWaitMs ?? 5_000;
  const tailSearch = deps.tailSearch ?? 256;
  /**
   * Reservations whose delivery append failed in this process. Once our own append has returned
   * (failed), nothing of ours is in flight, so a copy may take over at once instead of after the
   * grace period. Other processes fall back to the grace period.
   */
  const failedHolders = new Set<string>();

  /** The reservation an append of a delivery depends on: written first, or with it atomically. */
  interface Reservation {
    readonly stream: string;
    readonly event: ReservationEvent;
    readonly expected: ExpectedRevision;
  }

  /**
   * Appends the delivery, and before it the reservation if one is given, and after it `also`. With a
   * store that has appendAtomic they go in one transaction (one group commit, nothing to clean up
   * after a crash); otherwise the reservation first, then the delivery. Throws
   * WrongExpectedVersionError when the reservation is taken (nothing of this delivery was written).
   * The one append outside the command handler, on purpose (docs/architecture.md): it spans several
   * streams in one transaction, which the handler's one-stream append cannot; the reservation's
   * expected revision and the hand-off todo's `no_stream` are its concurrency guards.
   */
  async function appendDelivery(
    uuid: string,
    metadata: DeliveryMetadata,
    payload: Uint8Array,
    reservation: Reservation | undefined,
    also: readonly StreamAppend[],
    uniqueKey?: string,
  ): Promise<RecordedDelivery> {
    const delivery: StreamAppend = {
      streamId: DELIVERIES_STREAM,
      events: [
        {
          id: uuid,
          type: DELIVERY_RECEIVED,
          data: payload,
          metadata: encoder.encode(JSON.stringify(metadata)),
          contentType: 'application/octet-stream',
          ...(uniqueKey === undefined ? {} : { uniqueKey }),
        },
      ],
      options: { expectedRevision: 'any' },
    };
    const reserve: StreamAppend | undefined = reservation && {
      streamId: reservation.stream,
      events: [encodeEvent(reservation.event)],
      options: { expectedRevision: reservation.expected },
    };
    if (also.length > 0 && !store.appendAtomic)
      throw new TypeError('this store cannot append a hand-off atomically');
    let result: AppendResult;
    let alsoResults: AppendResult[] = [];
    if ((reserve || also.length > 0) && store.appendAtomic) {
      const parts = reserve ? [reserve, delivery, ...also] : [delivery, ...also];
      try {
        const results = await store.appendAtomic(parts);
        result = results[reserve ? 1 : 0]!;
        alsoResults = results.slice(reserve ? 2 : 1);
      } catch (e) {
        throw appendError(e);
      }
    } else {
      if (reserve) {
        try {
          await store.append(reserve.streamId, reserve.events, reserve.options);
        } catch (e) {
          throw appendError(e);
        }
      }
      try {
        result = await store.append(delivery.streamId, delivery.events, delivery.options);
      } catch (e) {
        if (e instanceof DuplicateKeyError) throw e;
        // The reservation stays: it names a delivery that is not in the log, which a copy takes over.
        if (failedHolders.size > 10_000) failedHolders.clear();
        failedHolders.add(uuid);
        throw storageError(e);
      }
    }
    const ack: IngestAck = {
      id: eventIdFromRevision(result.nextExpectedRevision),
      provider: metadata.provider,
      trust_mode: metadata.trust_mode,
      verified: metadata.verified,
      received_at: metadata.received_at,
    };
    return { ack, duplicate: false, position: result.position, also: alsoResults };
  }

  /** The reservation's holder, with the revision read (a takeover appends at it). */
  async function readReservation(
    stream: string,
  ): Promise<(ReservationState & { readonly revision: bigint }) | undefined> {
    let read: Aggregate<ReservationState | undefined>;
    try {
      read = await readAggregate(store, stream, reservationFolder);
    } catch (e) {
      throw storageError(e);
    }
    return read.state && { ...read.state, revision: read.revision };
  }

  /** The newest deliveries, where an in-flight or just-written original is. */
  async function findInTail(uuid: string): Promise<IngestAck | undefined> {
    try {
      for await (const e of store.readStream(DELIVERIES_STREAM, {
        direction: 'backwards',
        maxCount: tailSearch,
      })) {
        if (e.id !== uuid) continue;
        const m = decodeDeliveryMetadata(e);
        return {
          id: eventIdFromRevision(e.revision),
          provider: m.provider,
          trust_mode: m.trust_mode,
          verified: m.verified,
          received_at: m.received_at,
        };
      }
    } catch (e) {
      if (e instanceof StreamNotFoundError) return undefined;
      throw storageError(e);
    }
    return undefined;
  }

  async function findOriginal(uuid: string): Promise<IngestAck | undefined> {
    if (deps.findInReadModel) {
      try {
        const hit = await deps.findInReadModel(uuid);
        if (hit) return hit;
      } catch {
        // The read model is a shortcut; the log itself is searched next.
      }
    }
    return findInTail(uuid);
  }

  /** The delivery a duplicate key names, as its ack; undefined when it is gone (retention). */
  async function readHolder(holder: { streamId: string; revision: bigint }): Promise<IngestAck | undefined> {
    try {
      for await (const e of store.readStream(holder.streamId, {
        fromRevision: holder.revision,
        maxCount: 1,
      })) {
        if (e.revision !== holder.revision) return undefined;
        const m = decodeDeliveryMetadata(e);
        return {
          id: eventIdFromRevision(e.revision),
          provider: m.provider,
          trust_mode: m.trust_mode,
          verified: m.verified,
          received_at: m.received_at,
        };
      }
    } catch (e) {
      if (e instanceof StreamNotFoundError) return undefined;
      throw storageError(e);
    }
    return undefined;
  }

  /**
   * A store with unique keys: the delivery carries the key, and the store refuses it in the same
   * transaction when an event holds the key already, naming that event: the original, whose id
   * answers the copy. A key held by a reservation stream of before goes the reservation's way.
   */
  async function appendKeyed(
    key: string,
    metadata: DeliveryMetadata,
    payload: Uint8Array,
    also: readonly StreamAppend[],
  ): Promise<RecordedDelivery> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await appendDelivery(uuidv7(), metadata, payload, undefined, also, key);
      } catch (e) {
        if (!(e instanceof DuplicateKeyError) || e.key !== key) throw e;
        if (!e.holder) return onDuplicate(key, metadata, payload, also);
        const ack = await readHolder(e.holder);
        if (ack) return { ack, duplicate: true, position: null, also: [] };
        // The holder was pruned between the refusal and the read: the key is free again.
        if (attempt >= 3) throw storageError(e);
      }
    }
  }

  async function onDuplicate(
    stream: string,
    metadata: DeliveryMetadata,
    payload: Uint8Array,
    also: readonly StreamAppend[],
  ): Promise<RecordedDelivery> {
    const deadline = Date.now() + duplicateWaitMs;
    let delay = 5;
    for (;;) {
      const state = await readReservation(stream);
      if (!state) {
        // The reservation vanished (it cannot in this store, but be safe): reserve afresh.
        return store.uniqueKeys
          ? appendKeyed(stream, metadata, payload, also)
          : reserveAndAppend(stream, metadata, payload, also);
      }
      const found = await findOriginal(state.holder);
      const holderFailedHere = failedHolders.has(state.holder);
      const newUuid = uuidv7();
      const decision = decideOnDuplicate(
        state,
        found !== undefined,
        clock.now(),
        holderFailedHere ? 0 : graceMs,
        newUuid,
      );
      switch (decision.action) {
        case 'answer_original':
          return { ack: found!, duplicate: true, position: null, also: [] };
        case 'take_over':
          try {
            const recorded = await appendDelivery(
              newUuid,
              metadata,
              payload,
              { stream, event: decision.event, expected: state.revision },
              also,
              // With unique keys the delivery takes the key too; the store lets it past the
              // reservation stream that this same append writes.
              store.uniqueKeys ? stream : undefined,
            );
            failedHolders.delete(state.holder);
            return recorded;
          } catch (e) {
            if (isWrongExpectedVersion(e) && e.streamId === stream) continue; // another copy took it over first: follow it
            throw e;
          }
        case 'wait':
          if (Date.now() >= deadline) {
            throw new HooklineError(
              'unavailable',
              'a delivery with this external id is still being recorded; retry later',
            );
          }
          await sleep(delay);
          delay = Math.min(delay * 2, 200);
          break;
        default: {
          const never: never = decision;
          throw new Error(`unhandled decision ${JSON.stringify(never)}`);
        }
      }
    }
  }

  async function reserveAndAppend(
    stream: string,
    metadata: DeliveryMetadata,
    payload: Uint8Array,
    also: readonly StreamAppend[],
  ): Promise<RecordedDelivery> {
    const uuid = uuidv7();
    const reserved = reserveDelivery(uuid, metadata.provider, clock.now());
    try {
      return await appendDelivery(
        uuid,
        metadata,
        payload,
        { stream, event: reserved, expected: 'no_stream' },
        also,
      );
    } catch (e) {
      if (isWrongExpectedVersion(e) && e.streamId === stream)
        return onDuplicate(stream, metadata, payload, also);
      throw e;
    }
  }

  return {
    async record(input, also = []) {
      const { payload, received_at, ...rest } = input;
      const metadata: DeliveryMetadata = {
        ...rest,
        received_at: (received_at ?? clock.now()).toISOString(),
        payload_size: payload.byteLength,
      };
      if (metadata.external_id === null) return appendDelivery(uuidv7(), metadata, payload, undefined, also);
      const key = reservationStream(metadata.provider, metadata.external_id);
      if (store.uniqueKeys) return appendKeyed(key, metadata, payload, also);
      return reserveAndAppend(key, metadata, payload, also);
    },
  };
}
