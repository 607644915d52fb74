import { z } from 'zod';
import { defineEvent, typesOf } from '../shared.ts';

/**
 * The endpoint aggregate, stream `endpoint-<id>` (`ep_…`). The bearer credential is kept only as
 * its SHA-256 (hex); the webhook it was vended with is its own aggregate (`webhook-<id>`).
 */
export const endpointStream = (endpointId: string): string => `endpoint-${endpointId}`;
/** The slug reservation: `{ref}` resolves a slug through it. */
export const endpointSlugStream = (slug: string): string => `endpoint-slug-${slug}`;
/**
 * The doorbell of an endpoint: a todo landed on one of its queues. Its own stream rather than the
 * endpoint's, which every decision reads and which would otherwise grow by one event per todo.
 */
export const doorbellStream = (endpointId: string): string => `doorbell-${endpointId}`;

export const EndpointVended = defineEvent(
  'EndpointVended',
  z.object({
    endpoint_id: z.string(),
    slug: z.string(),
    agent_id: z.string(),
    agent_name: z.string(),
    operator: z.string(),
    /** The vended scope: the queues it drains (1 to 16; the first is its default). */
    queues: z.array(z.string()),
    verbs: z.array(z.string()),
    token_hash: z.string(),
    webhook_id: z.string(),
    replay_targets: z.array(z.string()),
    expires_at: z.string().nullable(),
    /** The signed-in human who vended it (the operator, or a forward-auth user). */
    vended_by: z.string(),
    vended_at: z.string(),
    /** Release 0.5.0: set on an endpoint minted by approving a friend request (`fr_…`). */
    friend_id: z.string().optional(),
  }),
);

/** The verb allowlist narrowed in place (never widened): a friend endpoint's grant. */
export const EndpointNarrowed = defineEvent(
  'EndpointNarrowed',
  z.object({
    endpoint_id: z.string(),
    verbs: z.array(z.string()),
    narrowed_by: z.string(),
    narrowed_at: z.string(),
  }),
);

export const EndpointRevoked = defineEvent(
  'EndpointRevoked',
  z.object({ endpoint_id: z.string(), revoked_by: z.string(), revoked_at: z.string() }),
);

/** Release 0.5.0: the owner lets the endpoint take friend requests (its A2A Agent Card is published), or not. */
export const EndpointFriendRequestsSet = defineEvent(
  'EndpointFriendRequestsSet',
  z.object({ endpoint_id: z.string(), accept: z.boolean(), set_by: z.string(), set_at: z.string() }),
);

/**
 * The owner changed what the endpoint may do: the queues it drains (added or removed) and its
 * verbs (narrowed only). `moved_to` names the queue that took the live todos of the removed
 * queues (moved before this event, one `TodoMoved` each), null when the removed queues were empty.
 */
export const EndpointScopeChanged = defineEvent(
  'EndpointScopeChanged',
  z.object({
    endpoint_id: z.string(),
    queues: z.array(z.string()),
    verbs: z.array(z.string()),
    removed_queues: z.array(z.string()),
    moved_to: z.string().nullable(),
    changed_by: z.string(),
    changed_at: z.string(),
  }),
);

export const EndpointSlugReserved = defineEvent(
  'EndpointSlugReserved',
  z.object({ endpoint_id: z.string(), slug: z.string() }),
);

/** A ring is a fact, not a decision: the MCP server turns it into a notification for connected agents. */
export const DoorbellRung = defineEvent(
  'DoorbellRung',
  z.object({
    endpoint_id: z.string(),
    queue: z.string(),
    todo_id: z.string(),
    /** The delivery event the todo was born from. */
    event_id: z.number(),
    rung_at: z.string(),
  }),
);

export const endpointEvents = [
  EndpointVended,
  EndpointNarrowed,
  EndpointScopeChanged,
  EndpointFriendRequestsSet,
  EndpointRevoked,
] as const;
export const endpointSlugEvents = [EndpointSlugReserved] as const;
export const doorbellEvents = [DoorbellRung] as const;

export type EndpointEvent = z.infer<(typeof endpointEvents)[number]>;
export type EndpointSlugEvent = z.infer<(typeof endpointSlugEvents)[number]>;
export type DoorbellEvent = z.infer<(typeof doorbellEvents)[number]>;

export const ENDPOINT_EVENT_TYPES = typesOf(endpointEvents);
export const ENDPOINT_SLUG_EVENT_TYPES = typesOf(endpointSlugEvents);
