/**
 * The doorbell's resources (docs/reference/mcp-tools.md): one per queue an endpoint drains. A client
 * subscribes (resources/subscribe) and hears `notifications/resources/updated` with this URI
 * whenever work becomes claimable there.
 */
export const QUEUE_URI_PREFIX = 'hookline://queues/';
/**
 * Every queue the endpoint drains, now and after a scope change: a session subscribed to it hears
 * each queue's ring, under that queue's own URI.
 */
export const ALL_QUEUES_URI = 'hookline://queues';

export const queueUri = (queue: string): string => `${QUEUE_URI_PREFIX}${queue}`;

export const queueOfUri = (uri: string): string | undefined =>
  uri.startsWith(QUEUE_URI_PREFIX) ? uri.slice(QUEUE_URI_PREFIX.length) : undefined;
