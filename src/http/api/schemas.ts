import { z } from 'zod';
import { agentNameSchema } from '../../domain/agent/name.ts';
import { ALL_VERBS } from '../../domain/endpoint/verbs.ts';
import { MAX_QUEUES, queueNameSchema } from '../../domain/queue.ts';
import { todoKeySchema, todoKindSchema, todoTitleSchema } from '../../domain/todo/input.ts';
import { WEBHOOK_SCHEMES } from '../../domain/webhook/events.ts';

/**
 * The operator API's shapes (spec 2.9), the one source of both request validation and the
 * OpenAPI document: routes declare them in their schema (route-schema.ts, openapi.ts). Each component is registered under its spec name.
 */
export const apiSchemas = z.registry<{ id: string; description?: string }>();

const dateTime = z.iso.datetime({ offset: true });

/** A verb of the catalog; anything else is refused naming it (a vend and a change alike). */
const verbSchema = z.enum(ALL_VERBS, {
  error: (issue) => `unknown verb ${JSON.stringify(issue.input)}: the verbs are ${ALL_VERBS.join(', ')}`,
});

export const AgentOut = z
  .object({
    id: z.string().describe('`ag_…`'),
    name: z.string(),
    description: z.string().optional(),
  })
  .register(apiSchemas, { id: 'AgentOut', description: 'An agent of the signed-in operator.' });

export const VendEndpointIn = z
  .strictObject({
    name: agentNameSchema.describe('The agent name; vending again under the same name reuses the agent.'),
    queue: queueNameSchema
      .optional()
      .describe(
        'The queue the endpoint drains and its webhook routes to (default `inbox`); `quarantine` is reserved.',
      ),
    queues: z
      .array(queueNameSchema)
      .min(1)
      .max(MAX_QUEUES)
      .optional()
      .describe(
        'Instead of `queue`: 1 to 16 queues the endpoint drains; its webhook routes to the first. Not with `queue`.',
      ),
    verbs: z
      .array(verbSchema)
      .min(1)
      .optional()
      .describe('The MCP verbs the endpoint may call (a subset of the verb catalog); default: all of them.'),
    expires_at: dateTime
      .nullable()
      .optional()
      .describe('When the endpoint stops working (a future date-time); default: never.'),
    replay_targets: z
      .array(z.url())
      .max(16)
      .optional()
      .describe('HTTPS URLs the endpoint may replay deliveries to, fixed at vend time (release 0.4.0).'),
    webhook_scheme: z
      .enum(WEBHOOK_SCHEMES)
      .optional()
      .describe(
        'How the senders of its webhook sign (default `none`, the URL alone): `standard`, `codehost`, `payments` or `chat`, as for create_webhook.',
      ),
    webhook_secret: z
      .string()
      .optional()
      .describe(
        'The webhook signing secret when the sender made it; default: a new one, returned once. Needs a webhook_scheme other than none.',
      ),
  })
  .refine((v) => v.queue === undefined || v.queues === undefined, {
    message: 'give queue or queues, not both',
    path: ['queues'],
  })
  .register(apiSchemas, { id: 'VendEndpointIn' });

export const UpdateEndpointIn = z
  .strictObject({
    queues: z
      .array(queueNameSchema)
      .min(1)
      .max(MAX_QUEUES)
      .optional()
      .describe('The queues the endpoint drains from now on (1 to 16); `quarantine` is reserved.'),
    verbs: z
      .array(verbSchema)
      .min(1)
      .optional()
      .describe('The verbs it keeps: a subset of those it holds (verbs only narrow).'),
    move_to: queueNameSchema
      .optional()
      .describe(
        'One of the new queues: the pending and claimed todos of removed queues move there. Without it, removing a queue that holds any is refused (409).',
      ),
  })
  .refine((v) => v.queues !== undefined || v.verbs !== undefined, {
    message: 'name queues, verbs or both',
  })
  .register(apiSchemas, { id: 'UpdateEndpointIn' });

export const VendWebhookOut = z
  .object({
    webhook_id: z.string(),
    ingest_url: z.url().describe('`{base_url}/webhooks/w/<token>`: the unguessable URL is the credential.'),
    trust_mode: z.literal('token'),
    scheme: z.enum(WEBHOOK_SCHEMES).describe('How its senders sign; `none`: the URL is the only credential.'),
    signing_secret: z.string().nullable().describe('The signing secret, returned once (null for `none`).'),
  })
  .register(apiSchemas, { id: 'VendWebhookOut' });

export const VendEndpointOut = z
  .object({
    id: z.string().describe('The endpoint id, `ep_…`; `{ref}` accepts it or the slug.'),
    agent_id: z.string(),
    agent_name: z.string(),
    slug: z.string(),
    mcp_url: z.url(),
    token: z
      .string()
      .describe('The endpoint bearer (`hlk_…`), returned exactly once and never retrievable again.'),
    queue: z.string().describe('The first of `queues`: where its webhook routes.'),
    queues: z.array(z.string()),
    verbs: z.array(z.string()),
    webhook: VendWebhookOut,
    mcp_json: z
      .record(z.string(), z.unknown())
      .describe(
        'A ready-to-paste MCP client configuration (`mcpServers` entry) wiring mcp_url with the token.',
      ),
    expires_at: dateTime.nullable(),
    replay_targets: z.array(z.string()),
  })
  .register(apiSchemas, { id: 'VendEndpointOut' });

export const EndpointOut = z
  .object({
    id: z.string(),
    slug: z.string(),
    agent_id: z.string(),
    agent_name: z.string(),
    state: z.enum(['active', 'revoked']),
    queues: z.array(z.string()),
    verbs: z.array(z.string()),
    expires_at: dateTime.nullable(),
    replay_targets: z.array(z.string()),
    mcp_url: z.url(),
    webhook_id: z.string(),
    created_at: dateTime,
    revoked_at: dateTime.nullable(),
  })
  .register(apiSchemas, { id: 'EndpointOut', description: 'A vended endpoint; never carries a credential.' });

export const PushTodoIn = z
  .strictObject({
    title: todoTitleSchema.describe('One line, 1 to 200 characters; reaches the agent as untrusted content.'),
    queue: z
      .string()
      .optional()
      .describe("One of the endpoint's vended queues; optional only when it drains exactly one."),
    kind: todoKindSchema.default('operator').describe('Reported as the todo kind by list_todos.'),
    payload: z.unknown().optional().describe('Any JSON, handed to the agent verbatim.'),
    key: todoKeySchema
      .optional()
      .describe(
        'Idempotency key scoped to the endpoint, at most 256 characters, matched against live todos.',
      ),
  })
  .register(apiSchemas, { id: 'PushTodoIn' });

export const PushTodoOut = z
  .object({
    id: z.string().describe('`td_…`'),
    endpoint_id: z.string(),
    slug: z.string(),
    queue: z.string(),
    state: z.string().describe('A new todo is `pending`.'),
    created: z.boolean().describe('false when the key matched a live todo, which is returned unchanged.'),
    event_id: z.number().int().describe('The `operator` delivery event the todo was born from.'),
  })
  .register(apiSchemas, { id: 'PushTodoOut' });

const TRUST_MODE = z.enum(['signed', 'token', 'open', 'queue', 'operator']);

export const EventSummary = z
  .object({
    id: z.number().int().describe('The event id.'),
    provider: z
      .string()
      .describe('codehost, payments, chat, generic:<name>, broker:<channel>, webhook:<id> or operator'),
    event_type: z.string().nullable(),
    trust_mode: TRUST_MODE,
    verified: z.boolean().describe('true only when a signature passed (or for an operator hand-off)'),
    payload_size: z.number().int().describe('Raw body size in bytes.'),
    received_at: dateTime,
  })
  .register(apiSchemas, { id: 'EventSummary', description: 'An accepted delivery, no payload or headers.' });

export const EventPage = z
  .object({
    events: z.array(EventSummary).describe('Newest first: received_at, then id, descending.'),
    next_cursor: z.string().nullable().describe('Pass back as `cursor` for the next page; null on the last.'),
    retained_from: z
      .number()
      .int()
      .describe(
        'The first event id the log keeps: retention pruned the deliveries before it (1 when it pruned none).',
      ),
  })
  .register(apiSchemas, { id: 'EventPage' });

export const EventDetail = z
  .object({
    ...EventSummary.shape,
    verify_detail: z.string().nullable(),
    external_id: z.string().nullable(),
    content_type: z.string().nullable(),
    source_ip: z.string().nullable(),
    headers: z
      .record(z.string(), z.string())
      .describe('Sanitized: signature, authorization and token values are `«redacted»`.'),
    payload: z.string().describe('The body exactly as received, read as `encoding` says.'),
    encoding: z
      .enum(['utf-8', 'base64'])
      .describe('utf-8 when the body is UTF-8 text, else base64 of its bytes.'),
    disposition: z
      .string()
      .nullable()
      .describe(
        'Where the rules of an endpoint webhook sent it (routed, dropped, held, faulted); else null.',
      ),
  })
  .register(apiSchemas, { id: 'EventDetail' });

export const ReplayIn = z
  .object({
    target_url: z
      .string()
      .min(1)
      .max(2048)
      .describe('Where to send the delivery: https, a host that resolves only to public addresses.'),
  })
  .register(apiSchemas, { id: 'ReplayIn' });

export const ReplayAttempt = z
  .object({
    event_id: z.number().int(),
    attempt: z.number().int().describe("0 for the delivery's first replay, then 1, 2, …"),
    target: z.string(),
    outcome: z
      .enum(['delivered', 'refused', 'failed'])
      .describe(
        'delivered: the target answered, whatever the status (a redirect is reported, not followed).',
      ),
    status: z.number().int().nullable().describe("The target's HTTP status when delivered."),
    location: z.string().nullable().describe('The Location of a 3xx answer (not followed).'),
    reason: z
      .string()
      .nullable()
      .describe(
        'refused: invalid_url, scheme, userinfo, host, address or resolution; failed: timeout, tls or network.',
      ),
    phase: z.enum(['call', 'connect']).nullable().describe('refused: when the SSRF guard said no.'),
    detail: z.string().nullable(),
    latency_ms: z.number().int(),
    via: z.enum(['api', 'ui', 'mcp']),
    by: z.string().describe('The operator or human who asked, or the endpoint slug (mcp).'),
    attempted_at: dateTime,
    response_snippet: z.string().optional().describe("delivered: the start of the target's answer (1 KiB)."),
  })
  .register(apiSchemas, { id: 'ReplayAttempt', description: 'One replay of a delivery, as recorded.' });

export const Me = z
  .object({
    operator: z.string().describe('The signed-in human; owner of agents and endpoints.'),
    client_id: z.string(),
    scope: z.string(),
  })
  .register(apiSchemas, { id: 'Me' });

export const HoldOut = z
  .object({
    todo_id: z.string().describe('The held todo (`td_…`), on the endpoint’s `quarantine` queue.'),
    event_id: z.number().int().describe('The delivery that was held.'),
    webhook_id: z.string(),
    endpoint_id: z.string(),
    disposition: z.enum(['held', 'faulted']).describe('`held` by a rule, `faulted`: a rule threw.'),
    reason: z.string().nullable(),
    message: z.string().nullable(),
    rule: z.object({ id: z.string(), index: z.number().int().nullable() }).nullable(),
    rules_version: z.number().int(),
    held_at: dateTime,
    released: z
      .object({
        queue: z.string().nullable(),
        todo_id: z.string().nullable(),
        by: z.string().nullable(),
        at: dateTime,
      })
      .nullable()
      .describe('Where and by whom it was released; null while held.'),
  })
  .register(apiSchemas, { id: 'HoldOut' });

export const QuarantinePage = z
  .object({ held: z.array(HoldOut).describe('At most `limit`, newest first.') })
  .register(apiSchemas, { id: 'QuarantinePage' });

export const ReleaseOut = z
  .object({
    held_todo_id: z.string(),
    todo_id: z.string().describe('The new todo on `queue`.'),
    queue: z.string(),
    event_id: z.number().int(),
    released_at: dateTime,
  })
  .register(apiSchemas, { id: 'ReleaseOut' });

export const FriendOut = z
  .object({
    id: z.string(),
    state: z.string().describe('pending, approved, declined, revoked, withdrawn or expired'),
    direction: z
      .enum(['incoming', 'outgoing'])
      .describe('incoming: the operator owns the endpoint asked; outgoing: one of theirs asked.'),
    via: z.string().describe('`local` (an endpoint of this instance) or `a2a`.'),
    approver: z.object({ endpoint_id: z.string(), slug: z.string() }),
    requester: z.object({
      name: z.string().nullable(),
      description: z.string().nullable(),
      card_url: z.string().nullable(),
      endpoint_id: z.string().nullable(),
    }),
    requested_verbs: z.array(z.string()),
    grantable_verbs: z.array(z.string()),
    queue: z.string().nullable(),
    message: z.string().nullable().describe('Untrusted text from the requester.'),
    granted_verbs: z.array(z.string()).nullable(),
    friend_endpoint: z
      .object({ id: z.string(), slug: z.string().nullable(), mcp_url: z.string() })
      .nullable(),
    approver_queue: z.string().nullable(),
    credential: z
      .enum(['available', 'collected'])
      .nullable()
      .describe('Whether the requester may still collect the friend endpoint’s bearer; never the bearer.'),
    requested_at: dateTime.nullable(),
    expires_at: dateTime.nullable(),
    approved_at: dateTime.nullable(),
    ended_at: dateTime.nullable(),
    ended_by: z.string().nullable(),
    last_activity_at: dateTime.nullable(),
  })
  .register(apiSchemas, { id: 'FriendOut', description: 'A friend edge; never carries a credential.' });

export const FriendCredentialOut = z
  .object({
    slug: z.string(),
    mcp_url: z.url(),
    token: z.string().describe('The friend endpoint’s bearer, handed over once.'),
    mcp_json: z.record(z.string(), z.unknown()),
  })
  .register(apiSchemas, { id: 'FriendCredentialOut' });

export const FriendRequestsOut = z
  .object({
    slug: z.string(),
    accept_friend_requests: z.boolean(),
    agent_card_url: z.url().nullable(),
  })
  .register(apiSchemas, { id: 'FriendRequestsOut' });

export const Problem = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    instance: z.string().optional(),
    code: z.string().optional(),
  })
  .register(apiSchemas, {
    id: 'Problem',
    description: 'RFC 9457 problem details (served as application/json).',
  });

export const RefParam = z.string().min(1).describe('The endpoint slug or its `ep_` id.');
export const RefParams = z.object({ ref: RefParam });
