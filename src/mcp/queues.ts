/**
 * The doorbell's resources (docs/reference/mcp-tools.md): one per queue an endpoint drains. A client
 * subscribes (resources/subscribe) and hears `notifications/resources/updated` with this URI
 * whenever work becomes claimable there.
 */
export const QUEUE_URI_PREFIX = 'hookline://queues/';

export const queueUri = (queue: string): string => `${QUEUE_URI_PREFIX}${queue}`;

export const queueOfUri = (uri: string): string | undefined =>
  uri.startsWith(QUEUE_URI_PREFIX) ? uri.slice(QUEUE_URI_PREFIX.length) : undefined;
