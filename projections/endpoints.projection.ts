import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import { ENDPOINT_EVENT_TYPES } from '../src/domain/endpoint/events.ts';
import { decodeOneOf, isOneOfTypes } from '../src/domain/events.ts';
import type { RecordedEvent } from '../src/eventstore/port.ts';
import { createEndpointTables } from './endpoints.table.ts';
import type { Projection } from './engine/types.ts';

export const endpointsProjection: Projection = {
  name: 'endpoints',
  version: 2,
  tables: ['endpoints'],
  createTables: createEndpointTables,
  handles: (e) => e.streamId.startsWith('endpoint-') && isOneOfTypes(ENDPOINT_EVENT_TYPES, e.type),
  async apply(db, events) {
    for (const e of events) await applyEndpointEvent(db, e);
  },
};

async function applyEndpointEvent(db: Kysely<Database>, e: RecordedEvent): Promise<void> {
  const event = decodeOneOf(e, ENDPOINT_EVENT_TYPES);
  switch (event.type) {
    case 'EndpointVended': {
      const d = event.data;
      await db
        .insertInto('endpoints')
        .values({
          id: d.endpoint_id,
          slug: d.slug,
          agent_id: d.agent_id,
          agent_name: d.agent_name,
          operator: d.operator,
          state: 'active',
          queues: JSON.stringify(d.queues),
          verbs: JSON.stringify(d.verbs),
          token_hash: d.token_hash,
          webhook_id: d.webhook_id,
          replay_targets: JSON.stringify(d.replay_targets),
          expires_at: d.expires_at ? new Date(d.expires_at) : null,
          created_at: new Date(d.vended_at),
          revoked_at: null,
          friend_id: d.friend_id ?? null,
          accept_friend_requests: false,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      return;
    }
    case 'EndpointNarrowed':
      await db
        .updateTable('endpoints')
        .set({ verbs: JSON.stringify(event.data.verbs) })
        .where('id', '=', event.data.endpoint_id)
        .execute();
      return;
    case 'EndpointFriendRequestsSet':
      await db
        .updateTable('endpoints')
        .set({ accept_friend_requests: event.data.accept })
        .where('id', '=', event.data.endpoint_id)
        .execute();
      return;
    case 'EndpointScopeChanged':
      await db
        .updateTable('endpoints')
        .set({ queues: JSON.stringify(event.data.queues), verbs: JSON.stringify(event.data.verbs) })
        .where('id', '=', event.data.endpoint_id)
        .execute();
      return;
    case 'EndpointRevoked':
      await db
        .updateTable('endpoints')
        .set({ state: 'revoked', revoked_at: new Date(event.data.revoked_at) })
        .where('id', '=', event.data.endpoint_id)
        .execute();
      return;
    default: {
      const never: never = event;
      return never;
    }
  }
}
