import type pg from 'pg';
import { sleep } from './wakeup.ts';

/**
 * One pooled connection LISTENs on the store's channel so appends committed by
 * other processes wake this one's readers. A lost connection is replaced with backoff, and the
 * readers are woken after each (re)connect since notifications may have been missed meanwhile.
 */
export interface NotifyListener {
  stop(): Promise<void>;
}

export function startNotifyListener(
  pool: pg.Pool,
  channel: string,
  ownPayload: string,
  onWake: () => void,
  onError: (err: unknown) => void,
): NotifyListener {
  const stopping = new AbortController();
  let current: { readonly release: (err: unknown) => boolean } | undefined;
  let running: Promise<void> = Promise.resolve();

  const listen = async (): Promise<void> => {
    let backoff = 100;
    while (!stopping.signal.aborted) {
      let released = false;
      let client: pg.PoolClient | undefined;
      // Exactly once per client: 'error', 'end', a failed LISTEN and stop() may all report it.
      const release = (err: unknown): boolean => {
        if (released || !client) return false;
        released = true;
        current = undefined;
        // Destroyed rather than returned: a pooled connection must not keep listening.
        client.release(err instanceof Error ? err : true);
        return true;
      };
      try {
        client = await pool.connect();
        const lost = (err: unknown) => {
          if (release(err) && !stopping.signal.aborted) {
            onError(err);
            running = listen();
          }
        };
        client.on('notification', (m) => {
          // Our own commits already woke the readers in-process.
          if (m.channel === channel && m.payload !== ownPayload) onWake();
        });
        client.on('error', lost);
        client.on('end', () => lost(new Error('Connection ended')));
        await client.query(`listen "${channel}"`);
        if (released) return; // lost meanwhile: `lost` started the next attempt
        if (stopping.signal.aborted) {
          release(true);
          return;
        }
        current = { release };
        onWake();
        return;
      } catch (err) {
        if (client && !release(err)) return; // `lost` already started the next attempt
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
      current?.release(true);
    },
  };
}
