import { type Position, START } from '../port.ts';

/**
 * A position in `$all` on PostgreSQL: the writing transaction's xid8 and the row's
 * global_position. Readers order by (transaction_id, global_position) and only see transactions
 * below the oldest running one that writes events (reads.ts), so this pair never goes backwards
 * for a reader.
 */
export interface SqlPosition {
  readonly transactionId: bigint;
  readonly globalPosition: bigint;
}

/** Before every event: xid8 and bigserial values are both above zero. */
export const ORIGIN: SqlPosition = { transactionId: 0n, globalPosition: 0n };

const pattern = /^(\d{1,20}):(\d{1,20})$/;

export function formatPosition(transactionId: string | bigint, globalPosition: string | bigint): Position {
  return `${transactionId}:${globalPosition}`;
}

const MAX_XID8 = 2n ** 64n - 1n;
const MAX_BIGINT = 2n ** 63n - 1n;

/** Parses a position of this adapter; throws TypeError on anything else (it is untrusted input, e.g. Last-Event-ID). */
export function parsePosition(position: Position): SqlPosition {
  if (position === START) return ORIGIN;
  const m = typeof position === 'string' ? pattern.exec(position) : null;
  const parsed = m ? { transactionId: BigInt(m[1]!), globalPosition: BigInt(m[2]!) } : undefined;
  // Out of range the SQL casts would fail on every query, and a subscription would retry forever.
  if (!parsed || parsed.transactionId > MAX_XID8 || parsed.globalPosition > MAX_BIGINT) {
    throw new TypeError(`not a position of the SQL event store: ${JSON.stringify(position)}`);
  }
  return parsed;
}

export function isSqlPosition(position: string): boolean {
  return position === START || pattern.test(position);
}

export function comparePositions(a: Position, b: Position): number {
  return compareSqlPositions(parsePosition(a), parsePosition(b));
}

export function compareSqlPositions(a: SqlPosition, b: SqlPosition): number {
  if (a.transactionId !== b.transactionId) return a.transactionId < b.transactionId ? -1 : 1;
  if (a.globalPosition !== b.globalPosition) return a.globalPosition < b.globalPosition ? -1 : 1;
  return 0;
}
