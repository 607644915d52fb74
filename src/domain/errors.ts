/**
 * A refusal decided by the domain: a stable code from a closed set, a message for the caller and
 * optional extensions (`field`, …). It carries no HTTP status: src/errors.ts maps every code to
 * one (the error catalogue), at the edge, so the domain never throws an HTTP type (style.md §5).
 */
export type DomainErrorCode =
  | 'bad_request'
  | 'invalid_body'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'endpoint_revoked'
  | 'lease_expired'
  | 'invalid_state'
  | 'invalid_setting';

export class DomainError extends Error {
  readonly code: DomainErrorCode;
  readonly extensions: Readonly<Record<string, unknown>>;

  constructor(code: DomainErrorCode, message: string, extensions: Record<string, unknown> = {}) {
    super(message);
    this.name = 'DomainError';
    this.code = code;
    this.extensions = extensions;
  }
}

/**
 * An event read from the store that the domain cannot use: a type no aggregate knows, a type that
 * does not belong on its stream, or data that fails its schema. Never a caller's mistake: the
 * log holds something this version cannot read, and the operation stops rather than guess.
 */
export class EventDecodeError extends Error {
  readonly streamId: string;
  readonly eventType: string;

  constructor(streamId: string, eventType: string, problem: string) {
    super(`event ${eventType} on stream ${streamId}: ${problem}`);
    this.name = 'EventDecodeError';
    this.streamId = streamId;
    this.eventType = eventType;
  }
}
