import type { IncomingHttpHeaders } from 'node:http';
import type { Kysely } from 'kysely';
import { findWebhookByTokenHash } from '../../projections/webhooks.queries.ts';
import { hashCredential } from '../auth/credentials.ts';
import type { Clock } from '../clock.ts';
import { createCachedAggregate } from '../commands/cached-aggregate.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import { DELIVERIES_STREAM, type IngestAck } from '../domain/delivery/events.ts';
import { endpointDecider } from '../domain/endpoint/decide.ts';
import { endpointStream } from '../domain/endpoint/events.ts';
import { type EndpointFacts, type EndpointState, factsOf, isExpired } from '../domain/endpoint/state.ts';
import { decodeDeliveryMetadata } from '../domain/events.ts';
import { QUARANTINE } from '../domain/queue.ts';
import { todoStream } from '../domain/todo/events.ts';
import { webhookDecider } from '../domain/webhook/decide.ts';
import { webhookStream } from '../domain/webhook/events.ts';
import {
  type ActiveWebhook,
  activeSecrets,
  type WebhookSigning,
  type WebhookState,
} from '../domain/webhook/state.ts';
import { HooklineError } from '../errors.ts';
import type { EventStore, RecordedEvent } from '../eventstore/port.ts';
import type { FollowUps, Step } from '../follow-up.ts';
import { newId } from '../ids.ts';
import type { RoutingPlan, WebhookRouter } from '../rules/router.ts'; // RULES (issue 7)
import {
  appendHandOff,
  type HandOff,
  handedOffTodo,
  handOffAppends,
  handsOffAtomically,
} from '../todos/hand-off.ts';
import type { KeptTodos } from '../todos/kept.ts';
import { checkStandardWebhook } from '../webhooks/signing.ts';
import { checkBody, type ParsedBody } from './body.ts';
import { type ExtractFamily, extractIdentity } from './extract.ts';
import type { DeliveryRecorder } from './recorder.ts';
import { sanitizeHeaders } from './sanitize.ts';
import { signatureSchemes } from './signatures/index.ts';
import { parseTrustedProxies, resolveSourceIp } from './source-ip.ts';

export interface EndpointWebhookDeps {
  readonly store: EventStore;
  readonly clock: Clock;
  readonly config: Config;
  readonly db: Kysely<Database>;
  readonly recorder: Pick<DeliveryRecorder, 'record'>;
  /**
   * What follows a durable delivery when it is not written with it (a retry finishing an earlier
   * delivery; a store without a multi-stream transaction), awaited up to a bound.
   */
  readonly followUps: FollowUps;
  /** Opens a sealed signing secret (the MCP secret box). */
  readonly openSecret: (sealed: string, webhookId: string) => string;
  /** RULES (issue 7): rules and routes decide the queue (src/rules); absent: the webhook's queue. */
  readonly router?: WebhookRouter;
  /** Todos this process wrote last (src/todos/kept.ts): a todo handed off here is claimed without a read. */
  readonly keptTodos?: KeptTodos;
}

export interface WebhookTarget {
  readonly webhook: ActiveWebhook;
  readonly endpoint: EndpointFacts;
  readonly signing: WebhookSigning | null;
  /** The webhook's whole state as read (its rules): the router decides on it without reading again. */
  readonly state: WebhookState;
}

export interface EndpointWebhookRequest {
  readonly token: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Uint8Array;
  readonly remoteAddress: string | undefined;
}

const NOT_FOUND = 'no webhook has this ingest URL';
// biome-ignore lint/suspicious/noControlCharactersInRegex: a todo title is one line
const CONTROL = /[\u0000-\u001f\u007f]+/g;

/**
 * `POST /webhooks/w/<token>` (release 0.3.0): the unguessable token is the credential (trust mode
 * `token`, found by its hash); a webhook with a signing secret also checks a signature in its
 * scheme (Standard Webhooks, or a code host's, payment provider's or chat platform's). An accepted delivery is one `DeliveryReceived` (provider `webhook:<id>`) with its
 * hand-off, in one transaction: a todo on the target queue of the owning endpoint, the doorbell,
 * the disposition (src/todos/hand-off.ts). Where the hand-off follows the durable delivery instead,
 * the answer waits for it only up to the follow-ups' bound (src/follow-up.ts).
 */
export function createEndpointWebhookReceiver(deps: EndpointWebhookDeps) {
  const { store, clock, config } = deps;
  const trusted = parseTrustedProxies(config.trustedProxies);

  /**
   * Which webhook and endpoint a token names never changes: kept (bounded) so that a delivery
   * checks the two streams at once instead of the read model and then each stream in turn.
   */
  const owners = new Map<string, { readonly webhookId: string; readonly endpointId: string }>();
  const OWNERS_KEPT = 10_000;
  /**
   * The webhook's and the endpoint's states, folded once and kept: each delivery asks only for the
   * two streams' revisions and folds again when one moved, so a revoke, a rotation or a rule change
   * is seen by the first delivery after its commit, as when both streams were read every time.
   */
  const webhooks = createCachedAggregate(store, webhookDecider, { max: OWNERS_KEPT });
  const endpoints = createCachedAggregate(store, endpointDecider, { max: OWNERS_KEPT });

  /** Check 1 of the ingestion order: unknown token, or a revoked/expired owner, is 404. */
  async function lookup(token: string): Promise<WebhookTarget> {
    if (!/^[A-Za-z0-9_-]{16,128}$/.test(token)) throw new HooklineError('not_found', NOT_FOUND);
    const tokenHash = hashCredential(token);
    let known = owners.get(tokenHash);
    let state: WebhookState;
    let endpointState: EndpointState | undefined;
    if (known) {
      const [w, e] = await Promise.all([
        webhooks(webhookStream(known.webhookId)),
        endpoints(endpointStream(known.endpointId)),
      ]);
      state = w.state;
      endpointState = e.state;
    } else {
      const row = await findWebhookByTokenHash(deps.db, tokenHash);
      if (!row) throw new HooklineError('not_found', NOT_FOUND);
      state = (await webhooks(webhookStream(row.id))).state;
    }
    const { webhook, signing } = state;
    if (webhook.status !== 'active' || webhook.tokenHash !== tokenHash) {
      owners.delete(tokenHash);
      throw new HooklineError('not_found', NOT_FOUND);
    }
    if (!known || known.endpointId !== webhook.endpointId) {
      known = { webhookId: webhook.id, endpointId: webhook.endpointId };
      if (owners.size >= OWNERS_KEPT) owners.clear();
      owners.set(tokenHash, known);
      endpointState = (await endpoints(endpointStream(webhook.endpointId))).state;
    }
    const endpoint = endpointState!;
    if (endpoint.status !== 'active' || isExpired(endpoint, clock.now())) {
      throw new HooklineError('not_found', NOT_FOUND);
    }
    return { webhook, endpoint: factsOf(endpoint), signing, state };
  }

  /**
   * Checks 4 and 5 of the ingestion order on the webhook's scheme: the same code as the instance
   * receivers (src/ingest/signatures) for a code host, payment or chat sender, Standard Webhooks
   * otherwise; during a rotation the previous secret verifies too, until it expires.
   */
  function verify(
    target: WebhookTarget,
    request: EndpointWebhookRequest,
  ): { readonly verified: boolean; readonly detail: string } {
    const { webhook, signing } = target;
    if (!signing) return { verified: false, detail: 'token ok' };
    const now = clock.now();
    const secrets = activeSecrets(signing, now).map((sealed) => deps.openSecret(sealed, webhook.id));
    const input = {
      headers: request.headers,
      body: request.body,
      secrets,
      nowMs: now.getTime(),
      toleranceS: config.signatureToleranceS,
    };
    if (signing.scheme === 'standard-webhooks') {
      const check = checkStandardWebhook({ ...input, required: signing.required });
      if (!check.ok) throw new HooklineError('invalid_signature', check.reason);
      return { verified: check.verified, detail: check.detail };
    }
    const result = signatureSchemes[signing.scheme].verify(input);
    if (!result.ok) throw new HooklineError(result.code, result.reason);
    return { verified: true, detail: result.detail };
  }

  /**
   * Checks 4 to 7 (timestamp, signature, body), then the delivery, the todo and the doorbell. A
   * chat platform's signed `url_verification` is answered with its challenge and records nothing.
   */
  async function receive(
    target: WebhookTarget,
    request: EndpointWebhookRequest,
  ): Promise<
    | { readonly kind: 'accepted'; readonly ack: IngestAck; readonly duplicate: boolean }
    | { readonly kind: 'handshake'; readonly challenge: string }
  > {
    const { webhook, endpoint, signing } = target;
    const { verified, detail } = verify(target, request);
    const contentType = one(request.headers['content-type']);
    const checked = checkBody(contentType, request.body);
    if (!checked.ok) throw new HooklineError(checked.code, checked.reason);
    const family: ExtractFamily =
      signing === null || signing.scheme === 'standard-webhooks' ? 'generic' : signing.scheme;
    if (family === 'chat' && checked.body.kind === 'json') {
      const v = checked.body.value as Record<string, unknown>;
      if (v.type === 'url_verification' && typeof v.challenge === 'string') {
        return { kind: 'handshake', challenge: v.challenge };
      }
    }
    const identity = extractIdentity(family, request.headers, checked.body);

    const provider = `webhook:${webhook.id}`;
    const todoId = newId('td');
    // RULES (issue 7): decided before recording, so a sandbox that cannot run is a 503 with nothing stored.
    const receivedAt = clock.now();
    const headers = sanitizeHeaders(request.headers, [request.token]);
    const plan = deps.router
      ? await deps.router.plan({
          webhookId: webhook.id,
          endpoint,
          view: {
            provider,
            event_type: identity.event_type,
            content_type: contentType ?? null,
            headers,
            received_at: receivedAt.toISOString(),
          },
          body: request.body,
          webhook: target.state,
        })
      : null;
    const drained = endpoint.queues.filter((q) => q !== QUARANTINE);
    const queue = plan
      ? plan.queue
      : drained.includes(webhook.queue) || drained.length === 0
        ? webhook.queue
        : drained[0]!;
    const handOff = handOffOf(target, {
      todoId: queue === null ? null : todoId, // RULES (issue 7): no todo when a rule dropped it
      queue,
      eventType: identity.event_type,
      body: checked.body,
      plan,
    });
    // The todo, its ring and the disposition go in the delivery's own transaction where the store
    // has one (src/todos/hand-off.ts); a duplicate writes none of them.
    const atomic = handsOffAtomically(store);
    const handedAt = clock.now();
    const recorded = await deps.recorder.record(
      {
        received_at: receivedAt, // RULES (issue 7)
        payload: request.body,
        provider,
        family: 'webhook',
        trust_mode: 'token',
        verified,
        verify_detail: detail,
        event_type: identity.event_type,
        external_id: identity.external_id,
        content_type: contentType ?? null,
        source_ip: resolveSourceIp(request.remoteAddress, request.headers['x-forwarded-for'], trusted),
        headers, // RULES (issue 7): sanitized above
        route: {
          endpoint_id: endpoint.id,
          slug: endpoint.slug,
          queue,
          todo_id: queue === null ? null : todoId, // RULES (issue 7): null when a rule dropped it
          kind: 'webhook',
          webhook_id: webhook.id,
        },
      },
      atomic ? handOffAppends(handOff, 'stamped', handedAt) : [],
    );
    const eventId = recorded.ack.id;
    if (atomic && !recorded.duplicate) {
      // The todo as written, so that the claim of it decides without reading it back.
      const { keptTodos } = deps;
      const todoId = handOff.todo?.todoId;
      const todo = keptTodos && todoId ? handedOffTodo(handOff, eventId, handedAt) : undefined;
      if (keptTodos && todoId && todo)
        keptTodos.keep(todoId, { state: todo, revision: 0n }, request.body.length);
      return { kind: 'accepted', ack: recorded.ack, duplicate: false };
    }
    const fields = { webhook: webhook.id, endpoint: endpoint.id, event_id: eventId };
    await deps.followUps.run(fields, async (step) => {
      // A redelivery (same webhook-id) was minted the first time: nothing new, nothing rung, unless
      // the first attempt was cut off between its delivery and its todo (the sender got no 2xx and
      // retried): then this copy finishes it, with the original's todo id.
      if (recorded.duplicate) {
        await finishInterrupted(target, eventId, plan, step);
        return;
      }
      // A store without a multi-stream transaction (EventStoreDB): the hand-off after the delivery.
      await appendHandOff(store, handOff, eventId, clock.now(), step);
    });
    return { kind: 'accepted', ack: recorded.ack, duplicate: recorded.duplicate };
  }

  /** What follows a delivery on this webhook: its todo (unless dropped), the doorbell, the disposition. */
  function handOffOf(
    target: WebhookTarget,
    d: {
      readonly todoId: string | null;
      readonly queue: string | null;
      readonly eventType: string | null;
      readonly body: ParsedBody;
      readonly plan: RoutingPlan | null;
    },
  ): HandOff {
    const { webhook, endpoint } = target;
    const provider = `webhook:${webhook.id}`;
    const todo =
      d.todoId === null || d.queue === null
        ? null
        : {
            todoId: d.todoId,
            endpoint,
            queue: d.queue,
            kind: 'webhook',
            // The delivery's event id is the todo's `event_id`; it is not known before the append.
            title: `${webhook.name}: ${d.eventType ?? 'delivery'}`.replace(CONTROL, ' ').slice(0, 200),
            payload: payloadOf(d.body),
            key: null,
            source: provider,
            human: provider,
          };
    const disposition = d.plan ? deps.router?.disposition(d.plan, d.todoId) : null; // RULES (issue 7)
    return { todo, facts: disposition ? [disposition] : [] };
  }

  /**
   * The original delivery's todo, when its metadata names one that was never created (a delivery
   * recorded before the hand-off was atomic, or on a store without a multi-stream transaction).
   * Uses the original's todo id, queue and bytes; the expected revision `no_stream` lets only one
   * of several racing copies create it. Returns the todo id it created, or null.
   */
  async function finishInterrupted(
    target: WebhookTarget,
    eventId: number,
    plan: RoutingPlan | null,
    step: Step,
  ): Promise<string | null> {
    step(`the original delivery of event ${eventId} and its todo`);
    let original: RecordedEvent | undefined;
    for await (const e of store.readStream(DELIVERIES_STREAM, {
      fromRevision: BigInt(eventId - 1),
      maxCount: 1,
    })) {
      original = e;
    }
    if (!original) return null;
    const metadata = decodeDeliveryMetadata(original);
    const route = metadata.route;
    if (typeof route?.todo_id !== 'string' || typeof route.queue !== 'string') return null;
    if ((await store.streamInfo(todoStream(route.todo_id))).revision >= 0n) return null;
    const checked = checkBody(metadata.content_type ?? undefined, original.data);
    if (!checked.ok) return null;
    const handOff = handOffOf(target, {
      todoId: route.todo_id,
      queue: route.queue,
      eventType: metadata.event_type,
      body: checked.body,
      // The disposition only when this copy's rules decide as the original's did.
      plan: plan && plan.queue === route.queue ? plan : null,
    });
    const created = await appendHandOff(store, handOff, eventId, clock.now(), step);
    return created ? route.todo_id : null;
  }

  return { lookup, receive };
}

export type EndpointWebhookReceiver = ReturnType<typeof createEndpointWebhookReceiver>;

const one = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** The todo's payload: the JSON as sent, or a form as an object of its fields. */
function payloadOf(body: ParsedBody): unknown {
  if (body.kind === 'json') return body.value;
  return Object.fromEntries(body.value.entries());
}
