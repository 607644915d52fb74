import type { IncomingHttpHeaders } from 'node:http';
import type { Kysely } from 'kysely';
import { findWebhookByTokenHash } from '../../projections/webhooks.queries.ts';
import { hashCredential } from '../auth/credentials.ts';
import type { Clock } from '../clock.ts';
import { handleCommand } from '../commands/handle-command.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import { DELIVERIES_STREAM, type IngestAck } from '../domain/delivery/events.ts';
import { type EndpointFacts, factsOf, isExpired } from '../domain/endpoint/state.ts';
import { decodeDeliveryMetadata } from '../domain/events.ts';
import { QUARANTINE } from '../domain/queue.ts'; // RULES (issue 7)
import { todoDecider } from '../domain/todo/decide.ts';
import { todoStream } from '../domain/todo/events.ts';
import type { ActiveWebhook, WebhookSigning } from '../domain/webhook/state.ts';
import { loadEndpoint } from '../endpoints/resolve.ts';
import { HooklineError } from '../errors.ts';
import { type EventStore, isWrongExpectedVersion, type RecordedEvent } from '../eventstore/port.ts';
import type { FollowUps, Step } from '../follow-up.ts';
import { newId } from '../ids.ts';
import type { RoutingPlan, WebhookRouter } from '../rules/router.ts'; // RULES (issue 7)
import { ringDoorbell } from '../todos/doorbell.ts';
import { loadWebhook } from '../webhooks/load.ts';
import { checkStandardWebhook } from '../webhooks/signing.ts';
import { checkBody, type ParsedBody } from './body.ts';
import { extractIdentity } from './extract.ts';
import type { DeliveryRecorder } from './recorder.ts';
import { sanitizeHeaders } from './sanitize.ts';
import { parseTrustedProxies, resolveSourceIp } from './source-ip.ts';

export interface EndpointWebhookDeps {
  readonly store: EventStore;
  readonly clock: Clock;
  readonly config: Config;
  readonly db: Kysely<Database>;
  readonly recorder: Pick<DeliveryRecorder, 'record'>;
  /** What follows a durable delivery (todo, doorbell, disposition), awaited up to a bound. */
  readonly followUps: FollowUps;
  /** Opens a sealed signing secret (the MCP secret box). */
  readonly openSecret: (sealed: string, webhookId: string) => string;
  /** RULES (issue 7): rules and routes decide the queue (src/rules); absent: the webhook's queue. */
  readonly router?: WebhookRouter;
}

export interface WebhookTarget {
  readonly webhook: ActiveWebhook;
  readonly endpoint: EndpointFacts;
  readonly signing: WebhookSigning | null;
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
 * `token`, found by its hash); a webhook with a signing secret also checks a Standard Webhooks
 * signature. An accepted delivery is one `DeliveryReceived` (provider `webhook:<id>`), then a todo
 * on the webhook's target queue of its owning endpoint, then the doorbell. The answer waits for
 * what follows the durable delivery only up to the follow-ups' bound (src/follow-up.ts).
 */
export function createEndpointWebhookReceiver(deps: EndpointWebhookDeps) {
  const { store, clock, config } = deps;
  const trusted = parseTrustedProxies(config.trustedProxies);

  /** Check 1 of the ingestion order: unknown token, or a revoked/expired owner, is 404. */
  async function lookup(token: string): Promise<WebhookTarget> {
    if (!/^[A-Za-z0-9_-]{16,128}$/.test(token)) throw new HooklineError('not_found', NOT_FOUND);
    const row = await findWebhookByTokenHash(deps.db, hashCredential(token));
    if (!row) throw new HooklineError('not_found', NOT_FOUND);
    const { state } = await loadWebhook(store, row.id);
    const { webhook, signing } = state;
    if (webhook.status !== 'active') throw new HooklineError('not_found', NOT_FOUND);
    const { state: endpoint } = await loadEndpoint(store, webhook.endpointId);
    if (endpoint.status !== 'active' || isExpired(endpoint, clock.now())) {
      throw new HooklineError('not_found', NOT_FOUND);
    }
    return { webhook, endpoint: factsOf(endpoint), signing };
  }

  /** Checks 5 to 7 (signature, body), then the delivery, the todo and the doorbell. */
  async function receive(
    target: WebhookTarget,
    request: EndpointWebhookRequest,
  ): Promise<{ readonly ack: IngestAck; readonly duplicate: boolean }> {
    const { webhook, endpoint, signing } = target;
    let verified = false;
    let detail = 'token ok';
    if (signing) {
      const check = checkStandardWebhook({
        headers: request.headers,
        body: request.body,
        secret: deps.openSecret(signing.secretSealed, webhook.id),
        required: signing.required,
        nowMs: clock.now().getTime(),
        toleranceS: config.signatureToleranceS,
      });
      if (!check.ok) throw new HooklineError('invalid_signature', check.reason);
      verified = check.verified;
      detail = check.detail;
    }
    const contentType = one(request.headers['content-type']);
    const checked = checkBody(contentType, request.body);
    if (!checked.ok) throw new HooklineError(checked.code, checked.reason);
    const identity = extractIdentity('generic', request.headers, checked.body);

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
        })
      : null;
    const drained = endpoint.queues.filter((q) => q !== QUARANTINE);
    const queue = plan
      ? plan.queue
      : drained.includes(webhook.queue) || drained.length === 0
        ? webhook.queue
        : drained[0]!;
    const recorded = await deps.recorder.record({
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
    });
    const eventId = recorded.ack.id;
    const fields = { webhook: webhook.id, endpoint: endpoint.id, event_id: eventId };
    await deps.followUps.run(fields, async (step) => {
      // A redelivery (same webhook-id) was minted the first time: nothing new, nothing rung, unless
      // the first attempt was cut off between its delivery and its todo (the sender got no 2xx and
      // retried): then this copy finishes it, with the original's todo id.
      if (recorded.duplicate) {
        await finishInterrupted(target, eventId, plan, step);
        return;
      }
      // RULES (issue 7): dropped by a rule: recorded with its disposition, no todo.
      if (queue === null) {
        step(`the disposition of event ${eventId} (dropped)`);
        if (plan) await deps.router?.recordDisposition(plan, { eventId, todoId: null });
        return;
      }
      await intake(
        target,
        { todoId, queue, eventId, eventType: identity.event_type, body: checked.body, plan },
        step,
      );
    });
    return { ack: recorded.ack, duplicate: recorded.duplicate };
  }

  /**
   * What follows a recorded delivery: its todo, the doorbell, the disposition. False when the
   * todo already exists: a retry of the same delivery finished it (finishInterrupted), and rang.
   */
  async function intake(
    target: WebhookTarget,
    d: {
      readonly todoId: string;
      readonly queue: string;
      readonly eventId: number;
      readonly eventType: string | null;
      readonly body: ParsedBody;
      readonly plan: RoutingPlan | null;
    },
    step: Step,
  ): Promise<boolean> {
    const { webhook, endpoint } = target;
    const provider = `webhook:${webhook.id}`;
    const title = `${webhook.name}: ${d.eventType ?? 'delivery'} (event ${d.eventId})`
      .replace(CONTROL, ' ')
      .slice(0, 200);
    const command = {
      type: 'CreateTodo' as const,
      todoId: d.todoId,
      endpoint,
      queue: d.queue,
      kind: 'webhook',
      title,
      payload: payloadOf(d.body),
      key: null,
      source: provider,
      eventId: d.eventId,
      human: provider,
    };
    step(`the todo ${d.todoId} of event ${d.eventId}`);
    try {
      await handleCommand({ store, clock }, todoStream(d.todoId), todoDecider, command, {
        newStream: true,
        retries: 0,
      });
    } catch (err) {
      if (isWrongExpectedVersion(err)) return false;
      throw err;
    }
    // RULES (issue 7): a delivery held in quarantine rings no doorbell (spec 3).
    if (d.queue !== QUARANTINE) {
      step(`the doorbell of endpoint ${endpoint.id} (queue ${d.queue}, todo ${d.todoId})`);
      await ringDoorbell(
        { store, clock },
        { endpointId: endpoint.id, queue: d.queue, todoId: d.todoId, eventId: d.eventId },
      );
    }
    if (d.plan?.disposition) step(`the disposition of event ${d.eventId} (todo ${d.todoId})`);
    if (d.plan) await deps.router?.recordDisposition(d.plan, { eventId: d.eventId, todoId: d.todoId }); // RULES (issue 7)
    return true;
  }

  /**
   * The original delivery's todo, when its metadata names one that was never created. Uses the
   * original's todo id, queue and bytes; the expected revision `no_stream` lets only one of
   * several racing copies create it. Returns the todo id it created, or null.
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
    const created = await intake(
      target,
      {
        todoId: route.todo_id,
        queue: route.queue,
        eventId,
        eventType: metadata.event_type,
        body: checked.body,
        // The disposition only when this copy's rules decide as the original's did.
        plan: plan && plan.queue === route.queue ? plan : null,
      },
      step,
    );
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
