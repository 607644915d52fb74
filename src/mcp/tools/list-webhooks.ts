import { z } from 'zod';
import { listWebhooksOfEndpoint } from '../../../projections/webhooks.queries.ts';
import { namedScheme } from '../../domain/webhook/events.ts';
import { loadWebhook } from '../../webhooks/load.ts';
import { ok } from '../result.ts';
import { defineTool } from './types.ts';

export const listWebhooks = defineTool({
  name: 'list_webhooks',
  title: 'List webhooks',
  description:
    'The webhooks this endpoint owns (release 0.5.0: only its own), with their queue and signature rule. Never shows an ingest URL or a secret: those are shown once, at creation.',
  input: z.object({}),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(ctx) {
    const { db, store, clock } = ctx.services.runtime;
    const rows = await listWebhooksOfEndpoint(db, ctx.endpoint.id);
    const webhooks = await Promise.all(
      rows.map(async (r) => {
        const { signing } = (await loadWebhook(store, r.id)).state;
        return {
          webhook_id: r.id,
          name: r.name,
          queue: r.queue,
          trust_mode: r.trust_mode,
          scheme: namedScheme(signing?.scheme ?? null),
          signature: signing
            ? {
                scheme: signing.scheme,
                required: signing.required,
                previous_expires_at:
                  signing.previous && signing.previous.expiresAt.getTime() > clock.now().getTime()
                    ? signing.previous.expiresAt.toISOString()
                    : null,
              }
            : null,
          vended_with_endpoint: r.id === ctx.endpoint.webhookId,
          created_at: new Date(r.created_at).toISOString(),
        };
      }),
    );
    return ok({ webhooks });
  },
});
