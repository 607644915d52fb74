import { z } from 'zod';
import { rotateWebhookSecret } from '../../webhooks/rotate.ts';
import { ok } from '../result.ts';
import { webhookId } from './rules-support.ts';
import { defineTool } from './types.ts';

const WEEK_S = 7 * 86_400;

export const rotateWebhookSecretTool = defineTool({
  name: 'rotate_webhook_secret',
  title: 'Rotate a webhook secret',
  description:
    'Starts a secret rotation on a webhook this endpoint owns: the new secret (returned once, or the one you supply) verifies at once, and the old one keeps verifying for previous_valid_seconds (default 86400, 24 h) so the sender can be switched over. retire_previous: true ends a rotation early. Owner only; a webhook with the scheme none has no secret.',
  input: z.object({
    webhook_id: webhookId,
    secret: z
      .string()
      .optional()
      .describe('The new secret, when the sender made it; default: a new one in the scheme’s form.'),
    previous_valid_seconds: z
      .number()
      .int()
      .min(0)
      .max(WEEK_S)
      .optional()
      .describe('How long the old secret keeps verifying, 0 to 604800 (default 86400).'),
    retire_previous: z
      .boolean()
      .optional()
      .describe('Instead of rotating: the previous secret of a running rotation stops verifying now.'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  async run(ctx, args) {
    const { store, clock } = ctx.services.runtime;
    const rotated = await rotateWebhookSecret(
      { store, clock, seal: (secret, id) => ctx.services.secretBox.seal(secret, id) },
      {
        caller: { endpointId: ctx.endpoint.id, slug: ctx.endpoint.slug },
        webhookId: args.webhook_id,
        secret: args.secret,
        overlapSeconds: args.previous_valid_seconds,
        retire: args.retire_previous,
      },
    );
    return ok({
      webhook_id: rotated.webhookId,
      scheme: rotated.scheme,
      signing_secret: rotated.secret,
      previous_expires_at: rotated.previousExpiresAt?.toISOString() ?? null,
      note: args.retire_previous
        ? 'the previous secret no longer verifies.'
        : args.secret === undefined
          ? 'signing_secret is shown only now; the previous one verifies until previous_expires_at.'
          : 'the secret you supplied verifies now; the previous one until previous_expires_at.',
    });
  },
});
