import { beforeEach, describe, expect, it } from 'vitest';
import { endpointsProjection } from '../../projections/endpoints.projection.ts';
import {
  endpointsUsingQueue,
  findEndpointBySlug,
  findEndpointByTokenHash,
  listEndpoints,
} from '../../projections/endpoints.queries.ts';
import { projectionSpec, recorded, resetStreams } from '../support/projection-spec.ts';
import { postgresAvailable } from '../support/services.ts';

const at = '2026-11-22T10:00:00.000Z';
const vended = (id: string, slug: string, queues: string[]) =>
  recorded(`endpoint-${id}`, {
    type: 'EndpointVended',
    data: {
      endpoint_id: id,
      slug,
      agent_id: 'ag_1',
      agent_name: 'bot',
      operator: 'admin',
      queues,
      verbs: ['claim'],
      token_hash: `${id}-hash`,
      webhook_id: 'wh_1',
      replay_targets: [],
      expires_at: null,
      vended_by: 'admin',
      vended_at: at,
    },
  });

describe.runIf(await postgresAvailable())('endpoints read model: given events, then rows', () => {
  const spec = projectionSpec(endpointsProjection);
  beforeEach(resetStreams);

  it('a vend is an active row found by slug and by token hash; a revoke marks it', async () => {
    await spec
      .given(
        vended('ep_1', 'bot-aaaaaa', ['inbox']),
        vended('ep_2', 'bot-bbbbbb', ['inbox']),
        recorded('endpoint-ep_2', {
          type: 'EndpointRevoked',
          data: { endpoint_id: 'ep_2', revoked_by: 'admin', revoked_at: at },
        }),
      )
      .thenRows(async (db) => {
        const rows = await listEndpoints(db, 'admin');
        expect(rows.map((r) => [r.id, r.state, r.queues])).toEqual([
          ['ep_1', 'active', ['inbox']],
          ['ep_2', 'revoked', ['inbox']],
        ]);
        expect((await findEndpointBySlug(db, 'bot-aaaaaa'))?.id).toBe('ep_1');
        expect((await findEndpointByTokenHash(db, 'ep_2-hash'))?.revoked_at).toEqual(new Date(at));
      });
  });

  it('names the endpoints whose scope uses a queue', async () => {
    await spec
      .given(vended('ep_1', 'bot-aaaaaa', ['inbox']), vended('ep_3', 'old-cccccc', ['quarantine']))
      .thenRows(async (db) => {
        expect(await endpointsUsingQueue(db, 'quarantine')).toEqual(['old-cccccc']);
      });
  });

  it('a scope change replaces the queues and verbs of the row', async () => {
    await spec
      .given(
        vended('ep_1', 'bot-aaaaaa', ['inbox', 'deploys']),
        recorded('endpoint-ep_1', {
          type: 'EndpointScopeChanged',
          data: {
            endpoint_id: 'ep_1',
            queues: ['inbox', 'alerts'],
            verbs: ['claim'],
            removed_queues: ['deploys'],
            moved_to: 'inbox',
            changed_by: 'admin',
            changed_at: at,
          },
        }),
      )
      .thenRows(async (db) => {
        expect((await findEndpointBySlug(db, 'bot-aaaaaa'))?.queues).toEqual(['inbox', 'alerts']);
      });
  });
});
