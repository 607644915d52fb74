import pg from 'pg';
import { sleep } from './wakeup.ts';

/**
 * A connection of its own LISTENs on the store's channel, so an append committed
 * by another process wakes this one's `$all` reader at once instead of at its next poll (each
 * commit is followed by a NOTIFY, store.ts notifyOthers). The connection is opened with the pool's settings
 * but outside the pool: it never takes one of the pool's connections from queries, and never waits
 * for one when the pool is busy. A lost connection is replaced with backoff, and the readers read
 * once more after each (re)connect, since notifications may have been missed meanwhile. What a
 * notification means (a commit, a process saying it listens) is the store's to tell from its payload.
 */
export interface NotifyListener {
  stop(): Promise<void>;
}

export function startNotifyListener(
  pool: pg.Pool,
  channel: string,
  /** A notification on the channel, with its payload (this process's own included). */
  onNotified: (payload: string) => void,
  /** Listening (again): notifications may have been missed meanwhile. */
  onListening: () => void,
  onError: (err: unknown) => void,
): NotifyListener {
  const stopping = new AbortController();
  let current: { readonly close: () => void } | undefined;
  let running: Promise<void> = Promise.resolve();

  const listen = async (): Promise<void> => {
    let backoff = 100;
    while (!stopping.signal.aborted) {
      let closed = false;
      // The pool's own settings (address, keepalive, timeouts), on a client of its own.
      const client = new pg.Client(pool.options);
      // Exactly once per client: 'error', 'end', a failed LISTEN and stop() may all report it.
      const close = (): boolean => {
        if (closed) return false;
        closed = true;
        current = undefined;
        client.end().catch(() => {});
        return true;
      };
      const lost = (err: unknown) => {
        if (close() && !stopping.signal.aborted) {
          onError(err);
          running = listen();
        }
      };
      client.on('error', () => {}); // a failed connect rejects below; nothing may go unheard meanwhile
      client.on('notification', (m) => {
        if (m.channel === channel) onNotified(m.payload ?? '');
      });
      try {
        await client.connect();
        client.on('error', lost);
        client.on('end', () => lost(new Error('Connection ended')));
        await client.query(`listen "${channel}"`);
        if (closed) return; // lost meanwhile: `lost` started the next attempt
        if (stopping.signal.aborted) {
          close();
          return;
        }
        current = { close };
        onListening();
        return;
      } catch (err) {
        if (!close()) return; // `lost` already started the next attempt
        if (stopping.signal.aborted) return;
        onError(err);
        await sleep(backoff, stopping.signal);
        backoff = Math.min(backoff * 2, 5000);
      }
    }
  };

  running = listen();
  return {
    async stop() {
      stopping.abort();
      await running;
      current?.close();
    },
  };
}
