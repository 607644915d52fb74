import fp from 'fastify-plugin';
import type { Runtime } from '../runtime.ts';
import { createFriendExpiry, type FriendExpiryOptions } from './expiry.ts';

/** Runs the friend-request expiry sweep while the app is up (src/friends/expiry.ts). */
export function friendExpiryPlugin(
  runtime: Pick<Runtime, 'store' | 'db' | 'sql' | 'clock' | 'logger'>,
  options: FriendExpiryOptions = {},
) {
  const sweep = createFriendExpiry(runtime, options);
  return fp(
    async (app) => {
      app.addHook('onReady', async () => sweep.start());
      app.addHook('onClose', async () => sweep.stop());
    },
    { name: 'hookline-friend-expiry' },
  );
}
