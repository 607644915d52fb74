import { beforeEach, describe, expect, it } from 'vitest';
import { webhooksProjection } from '../../projections/webhooks.projection.ts';
import {
  findWebhookByTokenHash,
  listWebhooksOfEndpoint,
  webhookNames,
  webhooksUsingQueue,
} from '../../projections/webhooks.queries.ts';
import { projectionSpec, recorded, resetStreams } from '../support/projection-spec.ts';
import { postgresAvailable } from '../support/services.ts';

const at = '2026-11-22T10:00:00.000Z';
const created = (id: string, queue: string) =>
  recorded(`webhook-${id}`, {
    type: 'WebhookCreated',
    data: {
      webhook_id: id,
      endpoint_id: 'ep_1',
      operator: 'admin',
      name: `hook ${id}`,
      queue,
      trust_mode: 'token',
      token_hash: `${id}-hash`,
      created_by: 'admin',
      created_at: at,
    },
  });

describe.runIf(await postgresAvailable())('webhooks read model: given events, then rows', () => {
  const spec = projectionSpec(webhooksProjection);
  beforeEach(resetStreams);

  it('a created webhook is found by its token hash and listed for its endpoint; its other events change nothing', async () => {
    await spec
      .given(
        created('wh_1', 'inbox'),
        recorded('webhook-wh_1', {
          type: 'WebhookSigningSecretSet',
          data: {
            webhook_id: 'wh_1',
            scheme: 'standard-webhooks',
            secret_sealed: 's',
            required: true,
            set_at: at,
          },
        }),
        created('wh_2', 'quarantine'),
      )
      .thenRows(async (db) => {
        expect((await findWebhookByTokenHash(db, 'wh_1-hash'))?.queue).toBe('inbox');
        expect((await listWebhooksOfEndpoint(db, 'ep_1')).map((w) => w.id)).toEqual(['wh_1', 'wh_2']);
        expect(await webhooksUsingQueue(db, 'quarantine')).toEqual(['wh_2']);
        expect(await webhookNames(db, ['wh_1'])).toEqual(new Map([['wh_1', 'hook wh_1']]));
      });
  });
});
