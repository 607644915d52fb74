/**
 * The endpoint aggregate, stream `endpoint-<id>` (`ep_…`). The bearer credential is kept only as
 * its SHA-256 (hex); the webhook it was vended with is its own aggregate (`webhook-<id>`).
 */
export type EndpointEvent =
  | {
      readonly type: 'EndpointVended';
      readonly data: {
        readonly endpoint_id: string;
        readonly slug: string;
        readonly agent_id: string;
        readonly agent_name: string;
        readonly operator: string;
        /** The vended scope; one queue at vend time (spec 2.9), a list so scopes can grow. */
        readonly queues: readonly string[];
        readonly verbs: readonly string[];
        readonly token_hash: string;
        readonly webhook_id: string;
        readonly replay_targets: readonly string[];
        readonly expires_at: string | null;
        /** The signed-in human who vended it (the operator, or a forward-auth user). */
        readonly vended_by: string;
        readonly vended_at: string;
      };
    }
  | {
      readonly type: 'EndpointRevoked';
      readonly data: {
        readonly endpoint_id: string;
        readonly revoked_by: string;
        readonly revoked_at: string;
      };
    };

export const ENDPOINT_EVENT_TYPES: readonly EndpointEvent['type'][] = ['EndpointVended', 'EndpointRevoked'];

export const isEndpointEventType = (t: string): t is EndpointEvent['type'] =>
  (ENDPOINT_EVENT_TYPES as readonly string[]).includes(t);

/** The slug reservation stream `endpoint-slug-<slug>` holds this one event. */
export type EndpointSlugEvent = {
  readonly type: 'EndpointSlugReserved';
  readonly data: { readonly endpoint_id: string; readonly slug: string };
};

/**
 * The doorbell: a todo landed on one of the endpoint's queues. Recorded on `doorbell-<endpoint
 * id>` rather than the endpoint's own stream, which every decision reads and which would
 * otherwise grow by one event per todo. The MCP server delivers it to connected agents.
 */
export type DoorbellEvent = {
  readonly type: 'DoorbellRung';
  readonly data: {
    readonly endpoint_id: string;
    readonly queue: string;
    readonly todo_id: string;
    /** The delivery event the todo was born from. */
    readonly event_id: number;
    readonly rung_at: string;
  };
};
