import { randomUUID } from 'node:crypto';
import {
  type AllStreamRecordedEvent,
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  ANY,
  type AppendExpectedRevision,
  BACKWARDS,
  binaryEvent,
  convertToCommandError,
  END,
  ErrorType,
  START as ES_START,
  type EventData as EsEventData,
  type Position as EsPosition,
  type RecordedEvent as EsRecordedEvent,
  EventStoreDBClient,
  excludeSystemEvents,
  FORWARDS,
  isCommandError,
  jsonEvent,
  NO_STREAM,
  STREAM_EXISTS,
  type StreamMetadata,
} from '@eventstore/db-client';
import { Observable, type Subscriber } from 'rxjs';
import {
  type AppendResult,
  type EventData,
  type EventStore,
  EventTooLargeError,
  type ExpectedRevision,
  type Position,
  type RecordedEvent,
  START,
  StoreUnavailableError,
  StreamNotFoundError,
  WrongExpectedVersionError,
} from './port.ts';

/**
 * The event store on EventStoreDB / KurrentDB (scale-out), a thin mapping onto
 * @eventstore/db-client; the only file that imports it. The server batches appends itself, so
 * there is no group commit here. Positions are "<commit>:<prepare>". JSON events travel as JSON
 * (the client serializes them), so their bytes come back as JSON.stringify writes them, which is
 * how codec.ts writes them; binary events and non-JSON metadata come back byte for byte.
 */

export interface EventStoreDbOptions {
  /** A subscription dropped by the server or the network, before it resubscribes. */
  readonly onError?: (err: unknown, context: string) => void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });
const pageSize = 1000;
const positionPattern = /^(\d{1,20}):(\d{1,20})$/;

/** Our START, narrowed from Position (a string) so the union below stays discriminated. */
const BEFORE_ALL = 'start' as const;
type EsFrom = EsPosition | typeof BEFORE_ALL;

function parsePosition(p: Position): EsFrom {
  if (p === START) return BEFORE_ALL;
  const m = positionPattern.exec(p);
  if (!m) throw new TypeError(`not an EventStoreDB position: ${JSON.stringify(p)}`);
  return { commit: BigInt(m[1]!), prepare: BigInt(m[2]!) };
}

const formatPosition = (p: EsPosition): Position => `${p.commit}:${p.prepare}`;

function compare(a: EsFrom, b: EsFrom): number {
  if (a === BEFORE_ALL || b === BEFORE_ALL) return a === b ? 0 : a === BEFORE_ALL ? -1 : 1;
  if (a.commit !== b.commit) return a.commit < b.commit ? -1 : 1;
  if (a.prepare !== b.prepare) return a.prepare < b.prepare ? -1 : 1;
  return 0;
}

function toExpected(e: ExpectedRevision): AppendExpectedRevision {
  if (e === 'any') return ANY;
  if (e === 'no_stream') return NO_STREAM;
  if (e === 'stream_exists') return STREAM_EXISTS;
  return e;
}

function toEsEvent(e: EventData): EsEventData {
  const id = e.id ?? randomUUID();
  // The client passes metadata through as bytes only when its constructor is exactly Uint8Array.
  const metadata = e.metadata ? new Uint8Array(e.metadata) : undefined;
  if (e.contentType === 'application/json') {
    return jsonEvent({ id, type: e.type, data: JSON.parse(decoder.decode(e.data)), metadata });
  }
  return binaryEvent({ id, type: e.type, data: e.data, metadata });
}

function fromEs(e: EsRecordedEvent | AllStreamRecordedEvent): RecordedEvent {
  const metadata = e.metadata;
  return {
    id: e.id,
    streamId: e.streamId,
    revision: e.revision,
    position: e.position ? formatPosition(e.position) : START,
    type: e.type,
    data: e.isJson ? encoder.encode(JSON.stringify(e.data)) : (e.data as Uint8Array),
    metadata:
      metadata === undefined
        ? null
        : metadata instanceof Uint8Array
          ? metadata
          : encoder.encode(JSON.stringify(metadata)),
    contentType: e.isJson ? 'application/json' : 'application/octet-stream',
    createdAt: e.created,
  };
}

/** System streams and events (`$`-prefixed) are the server's bookkeeping, never ours. */
const isSystem = (e: { streamId: string; type: string }) =>
  e.streamId.startsWith('$') || e.type.startsWith('$');

function mapError(err: unknown): unknown {
  // Some paths (the capability check before an append) reject with a raw gRPC error.
  const e = err instanceof Error && !isCommandError(err) ? convertToCommandError(err) : err;
  if (e instanceof Error && isCommandError(e)) {
    switch (e.type) {
      case ErrorType.UNAVAILABLE:
      case ErrorType.DEADLINE_EXCEEDED:
      case ErrorType.TIMEOUT:
      case ErrorType.NOT_LEADER:
        return new StoreUnavailableError(`EventStoreDB unavailable: ${e.message}`, { cause: err });
    }
  }
  return e;
}

/** The client accepts only esdb:// and esdb+discover://; KurrentDB's schemes are the same format. */
const clientConnectionString = (url: string): string =>
  url.replace(/^(kurrentdb|kdb)(\+discover)?:\/\//, 'esdb$2://');

export async function createEventStoreDbStore(
  connectionString: string,
  options: EventStoreDbOptions = {},
): Promise<EventStore> {
  const client = EventStoreDBClient.connectionString(clientConnectionString(connectionString));
  const onError = options.onError ?? (() => {});
  const live = new Set<{ subscriber: Subscriber<RecordedEvent>; stop: () => void }>();
  const inFlight = new Set<Promise<unknown>>();
  let closed = false;

  /** Raw $all pages forwards, strictly after `after`, system events included (the caller filters). */
  async function* allAfter(after: EsFrom, direction: typeof FORWARDS | typeof BACKWARDS) {
    let from: EsPosition | typeof ES_START | typeof END =
      after === BEFORE_ALL ? (direction === FORWARDS ? ES_START : END) : after;
    for (;;) {
      let count = 0;
      let last: EsPosition | undefined;
      try {
        for await (const resolved of client.readAll({ fromPosition: from, direction, maxCount: pageSize })) {
          count++;
          const e = resolved.event;
          if (!e) continue;
          last = e.position;
          // fromPosition is inclusive: the event at `from` was already handed on.
          if (from !== ES_START && from !== END && compare(e.position, from) === 0) continue;
          yield e;
        }
      } catch (err) {
        throw mapError(err);
      }
      if (count < pageSize || !last) return;
      from = last;
    }
  }

  function subscribe(
    subscriber: Subscriber<RecordedEvent>,
    after: Position,
    filter?: (e: RecordedEvent) => boolean,
  ) {
    let last = parsePosition(after);
    let generation = 0;
    let stopped = false;
    let backoff = 100;
    let timer: NodeJS.Timeout | undefined;
    let current: AllStreamSubscription | undefined;

    const start = () => {
      if (stopped || closed) return;
      const gen = ++generation;
      const sub = client.subscribeToAll({
        fromPosition: last === BEFORE_ALL ? ES_START : last,
        filter: excludeSystemEvents(),
      });
      current = sub;
      sub.on('data', (resolved: AllStreamResolvedEvent) => {
        const e = resolved.event;
        if (gen !== generation || !e || stopped) return;
        // A resubscription may replay the event at its start position: never hand one on twice.
        if (last !== BEFORE_ALL && compare(e.position, last) <= 0) return;
        last = e.position;
        backoff = 100;
        if (isSystem(e)) return;
        const event = fromEs(e);
        let wanted = true;
        try {
          wanted = !filter || filter(event);
        } catch (err) {
          stop(); // the caller's filter failed: this subscription ends with it
          subscriber.error(err);
          return;
        }
        if (wanted) subscriber.next(event);
      });
      const dropped = (err?: unknown) => {
        if (gen !== generation || stopped || closed) return;
        generation++; // ignore whatever else this subscription reports
        if (err) onError(err, 'subscribeAll');
        void sub.unsubscribe().catch(() => {});
        timer = setTimeout(start, backoff);
        backoff = Math.min(backoff * 2, 5000);
      };
      sub.on('error', dropped);
      sub.on('end', () => dropped());
      sub.on('close', () => dropped());
    };

    const stop = () => {
      stopped = true;
      generation++;
      clearTimeout(timer);
      void current?.unsubscribe().catch(() => {});
    };
    start();
    return stop;
  }

  async function streamRevision(streamId: string): Promise<bigint | undefined> {
    try {
      for await (const r of client.readStream(streamId, {
        direction: BACKWARDS,
        fromRevision: END,
        maxCount: 1,
      })) {
        if (r.event) return r.event.revision;
      }
      return undefined;
    } catch (err) {
      if (err instanceof Error && isCommandError(err) && err.type === ErrorType.STREAM_NOT_FOUND)
        return undefined;
      throw mapError(err);
    }
  }

  async function truncateBeforeOf(streamId: string) {
    let metadata: StreamMetadata | undefined;
    try {
      ({ metadata } = await client.getStreamMetadata(streamId));
    } catch (err) {
      throw mapError(err);
    }
    const tb = metadata?.truncateBefore;
    return { metadata, truncateBefore: typeof tb === 'number' ? BigInt(tb) : 0n };
  }

  async function append(
    streamId: string,
    events: readonly EventData[],
    expected: ExpectedRevision,
  ): Promise<AppendResult> {
    const size = events.reduce((n, e) => n + e.data.byteLength + (e.metadata?.byteLength ?? 0), 0);
    const esEvents = events.map(toEsEvent);
    let r: Awaited<ReturnType<typeof client.appendToStream>>;
    try {
      r = await client.appendToStream(streamId, esEvents, { expectedRevision: toExpected(expected) });
    } catch (raw) {
      const err = mapError(raw);
      if (err instanceof Error && isCommandError(err)) {
        if (err.type === ErrorType.WRONG_EXPECTED_VERSION) {
          const actual = err.actualVersion === NO_STREAM ? -1n : BigInt(err.actualVersion);
          throw new WrongExpectedVersionError(streamId, expected, actual);
        }
        if (err.type === ErrorType.MAXIMUM_APPEND_SIZE_EXCEEDED)
          throw new EventTooLargeError(size, { cause: err });
      }
      throw err;
    }
    // With throwOnAppendFailure=false in the connection string the client resolves instead of throwing.
    if (!r.success) throw new WrongExpectedVersionError(streamId, expected, r.nextExpectedRevision);
    return {
      nextExpectedRevision: r.nextExpectedRevision,
      position: r.position ? formatPosition(r.position) : START,
    };
  }

  return {
    kind: 'eventstoredb',

    append(streamId, events, opts = {}): Promise<AppendResult> {
      if (closed) return Promise.reject(new StoreUnavailableError('the event store is closed'));
      // A stamp needs an atomic append, which this adapter does not have (port.ts).
      if (events.some((e) => e.stamp !== undefined))
        return Promise.reject(new TypeError('only an atomic append may stamp an event'));
      // Unique keys need an index of the store's own, which EventStoreDB has not (port.ts, uniqueKeys).
      if (events.some((e) => e.uniqueKey !== undefined))
        return Promise.reject(new TypeError('this store has no unique keys'));
      const p = append(streamId, events, opts.expectedRevision ?? 'any');
      inFlight.add(p);
      void p.catch(() => {}).finally(() => inFlight.delete(p));
      return p;
    },

    async *readStream(streamId, opts = {}) {
      const direction = opts.direction === 'backwards' ? BACKWARDS : FORWARDS;
      if (opts.maxCount === 0) return;
      let count = 0;
      try {
        const read = client.readStream(streamId, {
          direction,
          fromRevision: opts.fromRevision ?? (direction === FORWARDS ? ES_START : END),
          ...(opts.maxCount === undefined ? {} : { maxCount: opts.maxCount }),
        });
        for await (const r of read) {
          if (!r.event) continue;
          count++;
          yield fromEs(r.event);
        }
      } catch (err) {
        if (err instanceof Error && isCommandError(err) && err.type === ErrorType.STREAM_NOT_FOUND) {
          throw new StreamNotFoundError(streamId);
        }
        throw mapError(err);
      }
      // An existing stream always has an event to show unless $tb hides all of them.
      if (count === 0 && opts.fromRevision === undefined) throw new StreamNotFoundError(streamId);
    },

    async readEvent(streamId, revision) {
      if (revision < 0n) return undefined;
      try {
        // A forward read from a revision that $tb hides starts at the first kept one: hence the check.
        for await (const r of client.readStream(streamId, {
          direction: FORWARDS,
          fromRevision: revision,
          maxCount: 1,
        })) {
          if (r.event) return r.event.revision === revision ? fromEs(r.event) : undefined;
        }
        return undefined;
      } catch (err) {
        if (err instanceof Error && isCommandError(err) && err.type === ErrorType.STREAM_NOT_FOUND)
          return undefined;
        throw mapError(err);
      }
    },

    async *readAll(opts = {}) {
      let remaining = opts.maxCount ?? Number.POSITIVE_INFINITY;
      if (remaining <= 0) return;
      for await (const e of allAfter(parsePosition(opts.after ?? START), FORWARDS)) {
        if (isSystem(e)) continue;
        yield fromEs(e);
        if (--remaining <= 0) return;
      }
    },

    subscribeAll(opts = {}) {
      return new Observable<RecordedEvent>((subscriber) => {
        if (closed) {
          subscriber.complete();
          return;
        }
        let entry: { subscriber: Subscriber<RecordedEvent>; stop: () => void } | undefined;
        try {
          entry = { subscriber, stop: subscribe(subscriber, opts.after ?? START, opts.filter) };
        } catch (err) {
          subscriber.error(err);
          return;
        }
        live.add(entry);
        return () => {
          entry.stop();
          live.delete(entry);
        };
      });
    },

    async headPosition() {
      for await (const e of allAfter(BEFORE_ALL, BACKWARDS)) {
        if (!isSystem(e)) return formatPosition(e.position);
      }
      return START;
    },

    // $all shows each commit as soon as it is made, in commit order: nothing is hidden.
    async committedPosition() {
      for await (const e of allAfter(BEFORE_ALL, BACKWARDS)) {
        if (!isSystem(e)) return formatPosition(e.position);
      }
      return START;
    },

    async streamInfo(streamId) {
      const [revision, { truncateBefore }] = await Promise.all([
        streamRevision(streamId),
        truncateBeforeOf(streamId),
      ]);
      // A wholly truncated stream shows no event; our truncation never goes past revision + 1.
      return { revision: revision ?? (truncateBefore > 0n ? truncateBefore - 1n : -1n), truncateBefore };
    },

    async truncateStream(streamId, beforeRevision) {
      const revision = await streamRevision(streamId);
      const { metadata, truncateBefore } = await truncateBeforeOf(streamId);
      if (revision === undefined) return;
      const limit = beforeRevision < revision + 1n ? beforeRevision : revision + 1n;
      if (limit <= truncateBefore) return;
      try {
        await client.setStreamMetadata(streamId, { ...metadata, truncateBefore: Number(limit) });
      } catch (err) {
        throw mapError(err);
      }
    },

    comparePositions: (a, b) => compare(parsePosition(a), parsePosition(b)),

    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([...inFlight]);
      for (const entry of live) {
        entry.stop();
        entry.subscriber.complete();
      }
      live.clear();
      await client.dispose();
    },
  };
}
