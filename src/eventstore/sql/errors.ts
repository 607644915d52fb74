/**
 * Classifies driver errors. A lost, refused or unanswered connection becomes StoreUnavailableError
 * for callers (503); deadlocks and serialization failures are retried by the writer.
 */

const connectionCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  '57P01', // admin_shutdown, e.g. pg_terminate_backend
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up)
  '53300', // too_many_connections
]);

const connectionMessages = [
  'Connection terminated',
  'connection error',
  'Connection ended',
  'timeout exceeded when trying to connect', // waiting for a pooled client (connectionTimeoutMillis)
  // The pool's query_timeout (db/open.ts): the server did not answer in time. The statement may
  // have run, even committed, so it is a lost connection (503, never run again), not unreachable.
  'Query read timeout',
  'Client was closed',
  'not queryable',
];

function codeOf(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

export function isConnectionError(err: unknown): boolean {
  const code = codeOf(err);
  if (code && (connectionCodes.has(code) || code.startsWith('08'))) return true;
  const message = err instanceof Error ? err.message : '';
  if (connectionMessages.some((m) => message.includes(m))) return true;
  if (err instanceof AggregateError) return err.errors.some(isConnectionError);
  return false;
}

const unreachableCodes = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  '57P03',
  '53300',
]);

/**
 * No connection could be made: nothing was sent, so nothing was written. A new connection that
 * timed out ('Connection terminated due to connection timeout') is left out on purpose: nothing was
 * written either, but against a server that hangs every retry would wait the whole timeout again.
 */
export function isUnreachable(err: unknown): boolean {
  const code = codeOf(err);
  if (code && unreachableCodes.has(code)) return true;
  return err instanceof Error && err.message.includes('timeout exceeded when trying to connect');
}

/** Deadlock or serialization failure: nothing was written, the same batch may run again. */
export function isTransientConflict(err: unknown): boolean {
  const code = codeOf(err);
  if (code === '40P01' || code === '40001') return true;
  // Two batches of different streams claimed one unique key: the later one meets the first's in
  // the index once that commits; run again, its own read then sees the key held.
  return code === '23505' && (err as { constraint?: unknown }).constraint === 'es_events_unique_key';
}
