import { z } from 'zod';
import { listEvents as pageEvents } from '../../../projections/log.queries.ts';
import { HooklineError } from '../../errors.ts';
import { ok } from '../result.ts';
import { defineTool } from './types.ts';

const LIMIT = 'limit must be a whole number from 1 to 200.';
const SINCE = 'since must be an ISO-8601 date-time (2026-11-24T10:00:00Z) or an event id (a whole number).';

// Every message is a sentence: a value outside these shapes is answered with invalid_argument
// and the message, not with a protocol error (argumentErrors below).
const input = z.object({
  provider: z
    .string({
      error: 'provider must be a provider name such as codehost, generic:<name> or broker:<channel>.',
    })
    .max(300, { error: 'provider is longer than any provider name.' })
    .optional()
    .describe(
      'Only this provider: codehost, payments, chat, generic:<name>, broker:<channel>, webhook:<webhook_id> or operator.',
    ),
  event_type: z
    .string({ error: 'event_type must be a string, such as push or invoice.paid.' })
    .optional()
    .describe('Only events of this provider-declared type.'),
  since: z
    .union(
      [z.string({ error: SINCE }), z.number({ error: SINCE }).int({ error: SINCE }).min(0, { error: SINCE })],
      { error: SINCE },
    )
    .optional()
    .describe('Lower bound, inclusive: an ISO-8601 date-time, or an event id.'),
  q: z
    .string({ error: 'q must be a string of search words, such as "invoice overdue" -test.' })
    .max(200, { error: 'q is longer than 200 characters.' })
    .optional()
    .describe(
      'Full text over payloads and event types, as the log screen searches: words (all must match, case folded), "a phrase", -word to exclude, or. At most 200 characters.',
    ),
  cursor: z
    .string({ error: 'cursor must be the next_cursor of a previous page.' })
    .max(200, { error: 'cursor is not one this server issued.' })
    .optional()
    .describe('The next_cursor of the previous page (opaque).'),
  limit: z
    .number({ error: LIMIT })
    .int({ error: LIMIT })
    .min(1, { error: LIMIT })
    .max(200, { error: LIMIT })
    .optional()
    .describe('Page size, 1 to 200 (default 50).'),
});

export const listEvents = defineTool({
  name: 'list_events',
  title: 'List accepted events',
  description:
    "Accepted deliveries this endpoint may read, newest first (received_at, then id): the instance's receivers (signed, generic, broker), this endpoint's own webhooks and its own hand-offs. EventSummary rows, no payloads or headers (get_event has them). Filters as the log screen: provider, event_type, since, q (full text over payloads and event types); page with cursor (keep the same filters). A bad value is invalid_argument.",
  input,
  argumentErrors: 'result',
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  async run(ctx, args) {
    try {
      const page = await pageEvents(
        ctx.services.runtime.db,
        {
          provider: args.provider,
          event_type: args.event_type,
          since: args.since === undefined ? undefined : String(args.since),
          q: args.q,
        },
        args.cursor,
        args.limit,
        { endpointId: ctx.endpoint.id },
      );
      return ok({ events: page.events, next_cursor: page.next_cursor });
    } catch (err) {
      // The log's own checks (a provider name, a date, a cursor) say what is wrong in a sentence.
      if (err instanceof HooklineError && err.code === 'invalid_filter') {
        throw new HooklineError('invalid_argument', sentence(err.message), err.extensions);
      }
      throw err;
    }
  },
});

/** The log's messages start with the field's own name (`since must be …`): keep its case, end the sentence. */
const sentence = (text: string): string => (/[.!?]$/.test(text) ? text : `${text}.`);
