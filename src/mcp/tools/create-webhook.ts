import { z } from 'zod';
import { hashCredential, mintIngestToken } from '../../auth/credentials.ts';
import { newId } from '../../domain/endpoint/ids.ts';
import { loadEndpoint, resolveEndpointId } from '../../domain/endpoint/resolve.ts';
import { type EndpointFacts, isExpired } from '../../domain/endpoint/state.ts';
import {
  decideCreateTokenWebhook,
  ingestUrl,
  initialWebhookState,
  webhookStream,
} from '../../domain/webhook/decide.ts';
import { HooklineError } from '../../errors.ts';
import { jsonEvent } from '../../eventstore/codec.ts';
import {
  mintSigningSecret,
  WEBHOOK_SIGNING_SET,
  type WebhookSigningEvent,
} from '../../ingest/endpoint-webhook-signing.ts';
import { ok } from '../result.ts';
import { queueName } from './schemas.ts';
import { drainQueues, queuesFor } from './scope.ts';
import { defineTool, type ToolContext } from './types.ts';

// biome-ignore lint/suspicious/noControlCharactersInRegex: a name is one line
const CONTROL = /[\u0000-\u001f\u007f]/;

const input = z.object({
  name: z
    .string()
    .trim()
    .min(1)
    .max(64)
    .refine((n) => !CONTROL.test(n), { message: 'name must be one line' })
    .describe('A name for the webhook (shown in todo titles and lists).'),
  as_endpoint: z
    .string()
    .min(1)
    .max(80)
    .optional()
    .describe(
      'Slug or ep_ id of another endpoint of the same owner that is to own the webhook (default: this one).',
    ),
  queue: queueName
    .optional()
    .describe("The owner's queue its deliveries become todos on (default: the owner's first queue)."),
  require_signature: z
    .boolean()
    .optional()
    .describe(
      'Refuse deliveries without a valid Standard Webhooks signature (default true); false lets unsigned ones in unverified.',
    ),
});

/** The owner: this endpoint, or another active one of the same operator (anything else is not_found). */
async function ownerOf(ctx: ToolContext, ref: string | undefined): Promise<EndpointFacts> {
  if (ref === undefined || ref === ctx.endpoint.slug || ref === ctx.endpoint.id) return ctx.endpoint;
  const { store, clock } = ctx.services.runtime;
  const id = await resolveEndpointId(store, ref);
  const { state } = id ? await loadEndpoint(store, id) : { state: { status: 'none' as const } };
  if (
    state.status !== 'active' ||
    state.operator !== ctx.endpoint.operator ||
    isExpired(state, clock.now())
  ) {
    throw new HooklineError('not_found', 'no active endpoint of the same owner has that slug or id');
  }
  const { status: _status, ...facts } = state;
  return facts;
}

export const createWebhook = defineTool({
  name: 'create_webhook',
  title: 'Create a webhook',
  description:
    'Creates a webhook owned by this endpoint (or, with as_endpoint, another endpoint of the same owner): deliveries POSTed to ingest_url become todos on its queue and ring the doorbell. Returns ingest_url and signing_secret (Standard Webhooks, whsec_...) exactly once: store them, they cannot be read back.',
  input,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(ctx, args) {
    const { store, clock, config, projections, logger } = ctx.services.runtime;
    const owner = await ownerOf(ctx, args.as_endpoint);
    const [queue] = args.queue === undefined ? drainQueues(owner) : queuesFor(owner, args.queue);
    if (queue === undefined) throw new HooklineError('forbidden', 'the owning endpoint drains no queue');

    const webhookId = newId('wh');
    const token = mintIngestToken();
    const secret = mintSigningSecret();
    const now = clock.now();
    const created = decideCreateTokenWebhook(
      {
        webhookId,
        endpointId: owner.id,
        operator: owner.operator,
        human: `endpoint:${ctx.endpoint.slug}`,
        name: args.name,
        queue,
        tokenHash: hashCredential(token),
      },
      initialWebhookState,
      now,
    );
    const signing: WebhookSigningEvent = {
      type: WEBHOOK_SIGNING_SET,
      data: {
        webhook_id: webhookId,
        scheme: 'standard-webhooks',
        secret_sealed: ctx.services.secretBox.seal(secret, webhookId),
        required: args.require_signature ?? true,
        set_at: now.toISOString(),
      },
    };
    // One append: a webhook never exists without its signing rule.
    const appended = await store.append(
      webhookStream(webhookId),
      [...created.map((e) => jsonEvent(e.type, e.data)), jsonEvent(signing.type, signing.data)],
      { expectedRevision: 'no_stream' },
    );
    // The ingest path finds the webhook in the read model: make the URL work before it is shown.
    await projections
      .waitFor(appended.position, { projection: 'webhooks', timeoutMs: 5000 })
      .catch((err: unknown) => logger.warn({ err }, 'mcp: webhooks read model lags behind create_webhook'));
    return ok({
      webhook_id: webhookId,
      name: args.name,
      endpoint: owner.slug,
      queue,
      trust_mode: 'token',
      signature: { scheme: 'standard-webhooks', required: signing.data.required },
      ingest_url: ingestUrl(config.baseUrl, token),
      signing_secret: secret,
      note: 'ingest_url and signing_secret are shown only now; hookline keeps neither in the clear.',
    });
  },
});
