import type { Observable } from 'rxjs';

/**
 * The event store port. Semantics follow EventStoreDB (design.md, "The event store port"):
 * 0-based stream revisions, expected-revision checks, an opaque ordered global position, and
 * catch-up reads and subscriptions over `$all` that never skip an event whose transaction commits
 * late and never repeat one. Two adapters implement it: PostgreSQL (one Kysely implementation,
 * embedded and server mode) and EventStoreDB. One conformance suite (test/eventstore) runs against each.
 */

/** `any`: no check. `no_stream`: the stream must not exist. `stream_exists`: it must. bigint: its current revision. */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | bigint;

/**
 * Opaque, totally ordered position in `$all`. On PostgreSQL `"<xid8>:<global_position>"`,
 * on EventStoreDB `"<commit>:<prepare>"`. Compare only with `comparePositions` of the adapter that
 * produced it; `START` means "before the first event".
 */
export type Position = string;
export const START: Position = 'start';

export type ContentType = 'application/json' | 'application/octet-stream';

export interface EventData {
  /** UUID; generated when absent. */
  readonly id?: string;
  readonly type: string;
  /** The event body, bytes preserved exactly (not necessarily UTF-8). */
  readonly data: Uint8Array;
  /** Optional JSON metadata bytes. */
  readonly metadata?: Uint8Array;
  readonly contentType?: ContentType;
  /** appendAtomic only: a number the store writes into `data` once the revisions are known. */
  readonly stamp?: RevisionStamp;
  /**
   * Only for a store with `uniqueKeys`: a key no other event of the store may hold while it is
   * retained (a delivery's external id). An append with an event whose key is held fails alone
   * (with its atomic group) with DuplicateKeyError, which names the holder.
   */
  readonly uniqueKey?: string;
}

/** The width in bytes of a stamp's place in an event's data. */
export const STAMP_WIDTH = 20;

/**
 * Events appended together sometimes name each other (a todo names the delivery it was born of by
 * its revision), and no revision is known before the append holds its streams. A stamp asks the
 * store to write, into `STAMP_WIDTH` bytes of spaces at `offset` of the event's data, the revision
 * of the first event that the same atomic append writes to `streamId`, plus `add`, in decimal and
 * left-aligned (the rest stays spaces, so a JSON number stays JSON).
 */
export interface RevisionStamp {
  /** Another part of the same atomic append; it must write at least one event. */
  readonly streamId: string;
  readonly add: number;
  readonly offset: number;
}

export interface RecordedEvent {
  readonly id: string;
  readonly streamId: string;
  readonly revision: bigint;
  readonly position: Position;
  readonly type: string;
  readonly data: Uint8Array;
  readonly metadata: Uint8Array | null;
  readonly contentType: ContentType;
  readonly createdAt: Date;
  /** The event's unique key (EventData.uniqueKey), on a store with unique keys; else absent or null. */
  readonly uniqueKey?: string | null;
}

/** An event this store appended, as `onAppended` tells of it. */
export interface AppendedEvent {
  readonly id: string;
  readonly type: string;
  readonly data: Uint8Array;
}

export type AppendedListener = (streamId: string, events: readonly AppendedEvent[]) => void;

export interface AppendOptions {
  readonly expectedRevision?: ExpectedRevision;
}

export interface AppendResult {
  /** Revision of the last event appended (the new current revision of the stream). */
  readonly nextExpectedRevision: bigint;
  /** Global position of the last event appended. */
  readonly position: Position;
}

/** One stream's part of an atomic append. */
export interface StreamAppend {
  readonly streamId: string;
  readonly events: readonly EventData[];
  readonly options?: AppendOptions;
}

export type Direction = 'forwards' | 'backwards';

export interface ReadStreamOptions {
  readonly direction?: Direction;
  /** Inclusive start revision; default the first (forwards) or the last (backwards). */
  readonly fromRevision?: bigint;
  readonly maxCount?: number;
}

export interface ReadAllOptions {
  /** Exclusive: events strictly after this position. Default START. */
  readonly after?: Position;
  readonly maxCount?: number;
}

export interface SubscribeAllOptions {
  /** Exclusive: deliver events strictly after this position. Default START. */
  readonly after?: Position;
  /** System events and the store's own bookkeeping are never delivered; this narrows further. */
  readonly filter?: (e: { streamId: string; type: string }) => boolean;
}

export interface StreamInfo {
  /** Current revision, or -1n when the stream does not exist. */
  readonly revision: bigint;
  /** Events with a revision below this were truncated (retention). */
  readonly truncateBefore: bigint;
}

export interface EventStore {
  readonly kind: 'postgres' | 'eventstoredb';

  /**
   * True when events may carry a unique key (EventData.uniqueKey): the SQL adapters, a column of
   * their own under a unique index written in the append's transaction. EventStoreDB has no such
   * index; its callers guard uniqueness with a reservation stream appended with `no_stream`.
   */
  readonly uniqueKeys?: boolean;

  /**
   * Appends atomically to one stream. Concurrent appends are grouped into one transaction (group
   * commit); a wrong expected revision fails that append alone with WrongExpectedVersionError.
   */
  append(streamId: string, events: readonly EventData[], options?: AppendOptions): Promise<AppendResult>;

  /**
   * Optional: appends to several streams in one transaction, all or none; a wrong expected
   * revision on any part fails every part with WrongExpectedVersionError naming that part's
   * stream. Results come in the order of the parts. The SQL adapters have it (one round trip,
   * within the group commit). EventStoreDB through @eventstore/db-client has no multi-stream
   * transaction, so that adapter leaves it out and callers append one stream after another.
   * Only here may an event carry a stamp (EventData.stamp).
   */
  appendAtomic?(appends: readonly StreamAppend[]): Promise<AppendResult[]>;

  /**
   * Optional: tells `listener` of each append this store made, once it has committed and before
   * the appender hears of it (so before any `$all` reader can see it), with the events' ids, types
   * and bytes as stored. Returns the function that stops it. The SQL adapters have it; it serves
   * what this very process must act on at once (the MCP doorbell), never the read models, which
   * follow `$all`. A listener must not throw and must not block.
   */
  onAppended?(listener: AppendedListener): () => void;

  /** Throws StreamNotFoundError when the stream does not exist (or is wholly truncated away). */
  readStream(streamId: string, options?: ReadStreamOptions): AsyncIterable<RecordedEvent>;

  /**
   * One event of a stream by its revision; undefined when the stream does not hold it (never
   * appended, or truncated away by retention). A read model that keeps only a summary reads an
   * event's bytes back with it (the log: a delivery's payload and headers).
   */
  readEvent(streamId: string, revision: bigint): Promise<RecordedEvent | undefined>;

  /** Reads `$all` in position order, after the given position, only events whose commit is visible to every reader. */
  readAll(options?: ReadAllOptions): AsyncIterable<RecordedEvent>;

  /**
   * Catch-up then live. Never skips a late-committing event, never repeats one; after a dropped
   * connection it resubscribes from the last delivered position. Completes when the store closes.
   */
  subscribeAll(options?: SubscribeAllOptions): Observable<RecordedEvent>;

  /**
   * The position of the newest visible event, or START: where a reader that must miss nothing
   * starts to follow the log.
   */
  headPosition(): Promise<Position>;

  /**
   * The position of the newest committed event, or START. On PostgreSQL it can be past
   * `headPosition`: a commit stays hidden from readers while an event writer's transaction that
   * began before it is still open (another batch, an import). Wait for it (read your writes:
   * every commit so far, one's own included); never start to read after it, which would skip the
   * hidden ones.
   */
  committedPosition(): Promise<Position>;

  streamInfo(streamId: string): Promise<StreamInfo>;

  /**
   * Optional: the current revision of each stream (-1n for one that does not exist), in the order
   * asked, in one round trip: what `streamInfo` says of each. The SQL adapters have it; it lets
   * concurrent revision checks of several streams share one query (src/commands/cached-aggregate.ts).
   */
  streamRevisions?(streamIds: readonly string[]): Promise<bigint[]>;

  /** Retention: removes events of the stream below `beforeRevision` (EventStoreDB: `$tb`). */
  truncateStream(streamId: string, beforeRevision: bigint): Promise<void>;

  /** Orders two positions of this store: negative, zero or positive. */
  comparePositions(a: Position, b: Position): number;

  /** Flushes pending appends, stops subscriptions (they complete) and releases connections. */
  close(): Promise<void>;
}

export class WrongExpectedVersionError extends Error {
  readonly streamId: string;
  readonly expected: ExpectedRevision;
  /** The stream's actual revision, -1n when it does not exist. */
  readonly actual: bigint;
  constructor(streamId: string, expected: ExpectedRevision, actual: bigint) {
    super(`wrong expected version on ${streamId}: expected ${String(expected)}, actual ${actual}`);
    this.name = 'WrongExpectedVersionError';
    this.streamId = streamId;
    this.expected = expected;
    this.actual = actual;
  }
}

/**
 * An event's unique key is held (EventData.uniqueKey). `holder` is the event that holds it, or
 * undefined when a stream named by the key holds it (a reservation stream written before the
 * store had unique keys): the caller resolves that one through the stream, and may take it over
 * by appending to that stream in the same atomic append.
 */
export class DuplicateKeyError extends Error {
  readonly key: string;
  readonly holder: { readonly streamId: string; readonly revision: bigint } | undefined;
  constructor(key: string, holder: { readonly streamId: string; readonly revision: bigint } | undefined) {
    super(
      holder
        ? `unique key ${key} is held by ${holder.streamId}@${holder.revision}`
        : `unique key ${key} is held by a stream of that name`,
    );
    this.name = 'DuplicateKeyError';
    this.key = key;
    this.holder = holder;
  }
}

export class StreamNotFoundError extends Error {
  readonly streamId: string;
  constructor(streamId: string) {
    super(`stream not found: ${streamId}`);
    this.name = 'StreamNotFoundError';
    this.streamId = streamId;
  }
}

/** The append was refused for its size (EventStoreDB's maximum append size); the receiver turns it into 413. */
export class EventTooLargeError extends Error {
  readonly size: number;
  constructor(size: number, options?: ErrorOptions) {
    super(`event of ${size} bytes is larger than the store accepts`, options);
    this.name = 'EventTooLargeError';
    this.size = size;
  }
}

/** The store cannot be reached (connection refused, database down); callers answer 503. */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

export const isWrongExpectedVersion = (e: unknown): e is WrongExpectedVersionError =>
  e instanceof WrongExpectedVersionError;
