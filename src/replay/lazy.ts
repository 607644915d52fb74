import type { ReplayClient, ReplayClientOptions } from './client.ts';

/**
 * The runtime's replay client, built on the first replay or target check: undici and the guarded
 * dispatcher are loaded only then (about 25 MB a process that never replays does not hold).
 */
export function createLazyReplayClient(options: ReplayClientOptions = {}): ReplayClient {
  let client: Promise<ReplayClient> | undefined;
  const get = () => {
    client ??= import('./client.ts').then(({ createReplayClient }) => createReplayClient(options));
    return client;
  };
  return {
    replay: async (req) => (await get()).replay(req),
    check: async (target) => (await get()).check(target),
    close: async () => {
      if (client) await (await client).close();
    },
  };
}
