import { z } from 'zod';
import { pageWebhookEvents } from '../../../projections/log.queries.ts';
import { listWebhooksOfEndpoint } from '../../../projections/webhooks.queries.ts';
import { HooklineError } from '../../errors.ts';
import { ok } from '../result.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';
import { cursor, limit } from './schemas.ts';
import { defineTool } from './types.ts';

const input = z.object({
  webhook_id: z
    .string()
    .regex(/^wh_[a-z2-7]{20}$/, 'a webhook id looks like wh_ followed by 20 base32 characters')
    .optional()
    .describe('Only this webhook (default: every webhook this endpoint owns).'),
  disposition: z
    .string()
    .regex(/^[a-z_]{1,32}$/)
    .optional()
    .describe('Only deliveries with this disposition (release 0.4.0), e.g. faulted.'),
  cursor,
  limit: limit(100, 20),
});

export const listWebhookEvents = defineTool({
  name: 'list_webhook_events',
  title: 'List webhook deliveries',
  description:
    "Deliveries received by this endpoint's webhooks, newest first (EventSummary rows plus webhook_id and disposition; no payloads). Filter by webhook_id and disposition; page with cursor.",
  input,
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(ctx, args) {
    const { db } = ctx.services.runtime;
    const owned = (await listWebhooksOfEndpoint(db, ctx.endpoint.id)).map((w) => w.id);
    if (args.webhook_id && !owned.includes(args.webhook_id)) {
      throw new HooklineError('not_found', 'this endpoint owns no webhook with that id');
    }
    const ids = args.webhook_id ? [args.webhook_id] : owned;
    if (ids.length === 0) return ok({ events: [], next_cursor: null });
    const size = args.limit ?? 20;
    let before: { at: Date; id: bigint } | undefined;
    if (args.cursor) {
      const c = decodeCursor(args.cursor);
      if (!/^[0-9]+$/.test(c.id))
        throw new HooklineError('bad_request', 'the cursor is not one this server issued');
      before = { at: c.at, id: BigInt(c.id) };
    }
    const rows = await pageWebhookEvents(db, {
      providers: ids.map((id) => `webhook:${id}`),
      disposition: args.disposition,
      before,
      limit: size + 1,
    });
    const page = rows.slice(0, size);
    const last = page.at(-1);
    return ok({
      events: page.map((r) => ({
        id: Number(r.id),
        webhook_id: r.provider.slice('webhook:'.length),
        provider: r.provider,
        event_type: r.event_type,
        trust_mode: r.trust_mode,
        verified: r.verified,
        payload_size: r.payload_size,
        received_at: new Date(r.received_at).toISOString(),
        disposition: r.disposition,
      })),
      next_cursor:
        rows.length > size && last ? encodeCursor(new Date(last.received_at), Number(last.id)) : null,
    });
  },
});
