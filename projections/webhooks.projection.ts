import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { decodeOneOf, isOneOfTypes } from '../src/domain/events.ts';
import { type SigningScheme, WEBHOOK_EVENT_TYPES } from '../src/domain/webhook/events.ts';
import { evolveWebhook, type WebhookState } from '../src/domain/webhook/state.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import type { Projection } from './engine/types.ts';
import { createWebhookTables, type WebhookRow } from './webhooks.table.ts';

export const webhooksProjection: Projection = {
  name: 'webhooks',
  // 2: the signing scheme, the rules and the routes (the console's webhook screen).
  version: 2,
  tables: ['webhooks'],
  createTables: createWebhookTables,
  handles: (e) => e.streamId.startsWith('webhook-') && isOneOfTypes(WEBHOOK_EVENT_TYPES, e.type),
  async apply(db, events) {
    for (const e of events) await applyWebhookEvent(db, e);
  },
};

/** The row as the aggregate's state, so the rules and routes move exactly as the decider sees them. */
const stateOf = (row: WebhookRow): WebhookState => ({
  webhook: {
    status: 'active',
    id: row.id,
    endpointId: row.endpoint_id,
    operator: row.operator,
    name: row.name,
    queue: row.queue,
    trustMode: 'token',
    tokenHash: row.token_hash,
  },
  // The sealed secret is not kept here: the read model shows the scheme, never the secret.
  signing:
    row.signing_scheme === null
      ? null
      : {
          scheme: row.signing_scheme as SigningScheme,
          secretSealed: '',
          required: row.signature_required,
          previous: null,
        },
  version: row.rules_version,
  rules: row.rules,
  routes: row.routes,
});

async function applyWebhookEvent(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  const event = decodeOneOf(e, WEBHOOK_EVENT_TYPES);
  if (event.type === 'WebhookCreated') {
    const d = event.data;
    await db
      .insertInto('webhooks')
      .values({
        id: d.webhook_id,
        endpoint_id: d.endpoint_id,
        operator: d.operator,
        name: d.name,
        queue: d.queue,
        trust_mode: d.trust_mode,
        token_hash: d.token_hash,
        created_at: new Date(d.created_at),
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    return;
  }
  const row = await db
    .selectFrom('webhooks')
    .selectAll()
    .where('id', '=', event.data.webhook_id)
    .executeTakeFirst();
  if (!row) return; // its WebhookCreated comes first in $all; nothing to change without it
  const next = evolveWebhook(stateOf(row), event);
  await db
    .updateTable('webhooks')
    .set({
      signing_scheme: next.signing?.scheme ?? null,
      signature_required: next.signing?.required ?? false,
      rules_version: next.version,
      rules: JSON.stringify(next.rules),
      routes: JSON.stringify(next.routes),
    })
    .where('id', '=', row.id)
    .execute();
}
