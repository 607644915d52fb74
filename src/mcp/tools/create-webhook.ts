import { z } from 'zod';
import { type EndpointFacts, factsOf, isExpired } from '../../domain/endpoint/state.ts';
import { ingestUrl } from '../../domain/webhook/decide.ts';
import { recordedScheme, WEBHOOK_SCHEMES, type WebhookScheme } from '../../domain/webhook/events.ts';
import { loadEndpoint, resolveEndpointId } from '../../endpoints/resolve.ts';
import { HooklineError } from '../../errors.ts';
import { createSignedWebhook } from '../../webhooks/create.ts';
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
  scheme: z
    .enum(WEBHOOK_SCHEMES)
    .optional()
    .describe(
      'How deliveries are signed (default standard): standard (Standard Webhooks), codehost (X-Hub-Signature-256, as GitHub signs), payments (Stripe-Signature/Payments-Signature t=,v1=), chat (v0= with the request timestamp, as Slack signs), or none (no secret: the URL is the credential).',
    ),
  secret: z
    .string()
    .optional()
    .describe(
      'The signing secret to verify with, when the sender made it (a payment provider shows you one to paste); default: a new one, returned once. 16 to 512 printable characters; for standard, whsec_ + base64.',
    ),
  require_signature: z
    .boolean()
    .optional()
    .describe(
      'Standard scheme only: refuse deliveries without a valid signature (default true); false lets unsigned ones in unverified.',
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
  return factsOf(state);
}

export const createWebhook = defineTool({
  name: 'create_webhook',
  title: 'Create a webhook',
  description:
    'Creates a webhook owned by this endpoint (or, with as_endpoint, another endpoint of the same owner): deliveries POSTed to ingest_url become todos on its queue and ring the doorbell. scheme picks how senders sign (standard, codehost, payments, chat, none). Returns ingest_url and signing_secret exactly once: store them, they cannot be read back.',
  input,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(ctx, args) {
    const { store, clock, config, projections, logger } = ctx.services.runtime;
    const owner = await ownerOf(ctx, args.as_endpoint);
    const [queue] = args.queue === undefined ? drainQueues(owner) : queuesFor(owner, args.queue);
    if (queue === undefined) throw new HooklineError('forbidden', 'the owning endpoint drains no queue');

    const created = await createSignedWebhook(
      { store, clock, seal: (secret, id) => ctx.services.secretBox.seal(secret, id) },
      {
        owner,
        human: `endpoint:${ctx.endpoint.slug}`,
        name: args.name,
        queue,
        signing: {
          scheme: args.scheme ?? 'standard',
          secret: args.secret,
          requireSignature: args.require_signature,
        },
      },
    );
    // The ingest path finds the webhook in the read model: make the URL work before it is shown.
    await projections
      .waitFor(created.position, { projection: 'webhooks', timeoutMs: 5000 })
      .catch((err: unknown) => logger.warn({ err }, 'mcp: webhooks read model lags behind create_webhook'));
    return ok({
      webhook_id: created.webhookId,
      name: args.name,
      endpoint: owner.slug,
      queue,
      trust_mode: 'token',
      scheme: created.scheme,
      signature:
        created.secret === null
          ? null
          : {
              scheme: recordedScheme(created.scheme as Exclude<WebhookScheme, 'none'>),
              required: created.required,
            },
      ingest_url: ingestUrl(config.baseUrl, created.token),
      signing_secret: created.secret,
      note:
        created.secret === null
          ? 'ingest_url is shown only now and is the only credential; hookline does not keep it in the clear.'
          : args.secret === undefined
            ? 'ingest_url and signing_secret are shown only now; hookline keeps neither in the clear.'
            : 'ingest_url is shown only now; the secret you supplied is kept sealed.',
    });
  },
});
