/**
 * The webhook aggregate, stream `webhook-<id>` (`wh_…`). A webhook belongs to an endpoint
 * (release 0.3.0). The one vended with an endpoint trusts its unguessable ingest URL (trust
 * mode `token`): the URL token is kept only as its SHA-256 (hex), so the ingest path finds the
 * webhook by hashing the token it receives. Other modules add events (rules, routes, signing
 * secrets) to this union.
 */
export type WebhookEvent = {
  readonly type: 'WebhookCreated';
  readonly data: {
    readonly webhook_id: string;
    readonly endpoint_id: string;
    readonly operator: string;
    readonly name: string;
    /** The queue its deliveries become todos on. */
    readonly queue: string;
    readonly trust_mode: 'token';
    readonly token_hash: string;
    readonly created_by: string;
    readonly created_at: string;
  };
};

export const WEBHOOK_EVENT_TYPES: readonly WebhookEvent['type'][] = ['WebhookCreated'];

export const isWebhookEventType = (t: string): t is WebhookEvent['type'] =>
  (WEBHOOK_EVENT_TYPES as readonly string[]).includes(t);
